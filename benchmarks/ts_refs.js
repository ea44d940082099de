// The TypeScript language service's references, the ground truth of refs_quality.py --typescript.
// Reads {"root", "files": [keys], "typescript": path of the typescript package,
// "targets": [{"file", "line", "column"}]} (1-based line, 0-based column) on stdin; writes one JSON
// array per target: [[file, line, column, isDefinition], ...] of every reference TypeScript finds.
// isDefinition is also true where the name is any declaration's own name (an override in another
// class, an expando `app.listen = function …`), as SAI leaves out every definition. A function placed
// in an object by shorthand (`export default {isStream}`) is called through the property
// (`utils.isStream()`): the service lists those uses only when asked at the property, so they are
// asked there too.
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
function declares(source, start) {
  const node = ts.getTouchingPropertyName(source, start);
  // a shorthand property (`{isStream}`) reads the name as much as it declares the property
  return Boolean(node && node.parent && node.parent.name === node && ts.isDeclaration(node.parent)
                 && !ts.isShorthandPropertyAssignment(node.parent));
}
function shorthand(source, start) {
  const node = ts.getTouchingPropertyName(source, start);
  return Boolean(node && node.parent && ts.isShorthandPropertyAssignment(node.parent));
}
function references(file, position, found, seen) {
  for (const symbol of service.findReferences(file, position) || []) {
    for (const ref of symbol.references) {
      if (!texts.has(ref.fileName)) continue;
      const key = ref.fileName + ":" + ref.textSpan.start;
      if (seen.has(key)) continue;
      seen.add(key);
      const source = service.getProgram().getSourceFile(ref.fileName);
      const at = source.getLineAndCharacterOfPosition(ref.textSpan.start);
      const definition = Boolean(ref.isDefinition) || declares(source, ref.textSpan.start);
      found.push([path.relative(request.root, ref.fileName), at.line + 1, at.character, definition]);
      if (shorthand(source, ref.textSpan.start)) references(ref.fileName, ref.textSpan.start, found, seen);
    }
  }
}
const out = [];
for (const target of request.targets) {
  const file = path.join(request.root, target.file);
  const source = service.getProgram().getSourceFile(file);
  const found = [];
  references(file, source.getPositionOfLineAndCharacter(target.line - 1, target.column), found, new Set());
  out.push(found);
}
process.stdout.write(JSON.stringify(out));
