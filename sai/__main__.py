from sai.cli import main

raise SystemExit(main())
