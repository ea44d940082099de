// The TypeScript language service's references, the ground truth of refs_quality.py --typescript.
// Reads {"root", "files": [keys], "typescript": path of the typescript package,
// "targets": [{"file", "line", "column"}]} (1-based line, 0-based column) on stdin; writes one JSON
// array per target: [[file, line, column, isDefinition], ...] of every reference TypeScript finds.
const fs = require("fs");
const path = require("path");
const request = JSON.parse(fs.readFileSync(0, "utf8"));
const ts = require(request.typescript);
const files = request.files.map((key) => path.join(request.root, key));
const texts = new Map(files.map((file) => [file, fs.readFileSync(file, "utf8")]));
const options = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext,
                  moduleResolution: ts.ModuleResolutionKind.Bundler, allowJs: true, jsx: ts.JsxEmit.React,
                  strict: false, noEmit: true, skipLibCheck: true };
const host = {
  getScriptFileNames: () => files,
  getScriptVersion: () => "1",
  getScriptSnapshot: (file) => {
    const text = texts.has(file) ? texts.get(file) : (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined);
    return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
  },
  getCurrentDirectory: () => request.root,
  getCompilationSettings: () => options,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: ts.sys.fileExists, readFile: ts.sys.readFile, readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists, getDirectories: ts.sys.getDirectories,
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());
const out = [];
for (const target of request.targets) {
  const file = path.join(request.root, target.file);
  const source = service.getProgram().getSourceFile(file);
  const position = source.getPositionOfLineAndCharacter(target.line - 1, target.column);
  const found = [];
  for (const symbol of service.findReferences(file, position) || []) {
    for (const ref of symbol.references) {
      if (!texts.has(ref.fileName)) continue;
      const at = service.getProgram().getSourceFile(ref.fileName).getLineAndCharacterOfPosition(ref.textSpan.start);
      found.push([path.relative(request.root, ref.fileName), at.line + 1, at.character, Boolean(ref.isDefinition)]);
    }
  }
  out.push(found);
}
process.stdout.write(JSON.stringify(out));
