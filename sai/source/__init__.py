"""What is indexed: walking the tree, ignore rules, git changes, globs and languages."""
