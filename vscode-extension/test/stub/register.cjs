// Makes `require('vscode')` load the stub: the real module exists only inside VS Code's
// extension host. Loaded with `node --require` before the tests.
const Module = require('module');
const path = require('path');

const stub = path.join(__dirname, 'vscode.ts');
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return resolveFilename.call(this, request === 'vscode' ? stub : request, ...rest);
};
