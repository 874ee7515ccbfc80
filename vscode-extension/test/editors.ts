/** Editors and symbols of the stub, typed as the extension sees them. */

import type * as vscode from 'vscode';

import { DocumentSymbol, Position, Range, Selection, Uri } from './stub/vscode';

export function editorAt(path: string, line: number, character: number, languageId = 'cuda-cpp'): vscode.TextEditor {
  const cursor = new Position(line, character);
  return { document: { uri: Uri.file(path), languageId }, selection: new Selection(cursor, cursor) } as unknown as vscode.TextEditor;
}

/** A document symbol as the server reports a kernel definition spanning these lines. */
export function kernelSymbol(name: string, firstLine: number, lastLine: number, detail = '__global__'): vscode.DocumentSymbol {
  const range = new Range(new Position(firstLine, 0), new Position(lastLine, 1));
  // 11: SymbolKind.Function.
  return new DocumentSymbol(name, detail, 11, range, range) as unknown as vscode.DocumentSymbol;
}
