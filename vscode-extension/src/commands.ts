/**
 * The palette commands that run server commands on a kernel of the active CUDA editor.
 *
 * The server advertises `cutune.templatize` and friends, and vscode-languageclient registers each
 * advertised id as a VS Code command; so the palette commands have ids of their own
 * (`cutune.palette.*`), take their argument from the editor, and send `workspace/executeCommand`.
 */

import * as vscode from 'vscode';

/** The one argument of every server command: the kernel by name, or by a position inside it. */
export interface CommandArgument {
  uri: string;
  kernel?: string;
  position?: { line: number; character: number };
}

export interface KernelCommand {
  /** The palette command's id (package.json `contributes.commands`). */
  id: string;
  /** The server command it sends. */
  serverCommand: string;
  /** Names the action in messages: "cannot <verb> ...". */
  verb: string;
}

export const KERNEL_COMMANDS: readonly KernelCommand[] = [
  { id: 'cutune.palette.templatize', serverCommand: 'cutune.templatize', verb: 'templatize' },
  { id: 'cutune.palette.tune', serverCommand: 'cutune.tune', verb: 'tune' },
  { id: 'cutune.palette.verify', serverCommand: 'cutune.verify', verb: 'verify' },
  { id: 'cutune.palette.applyBest', serverCommand: 'cutune.applyBest', verb: 'apply the best configuration to' },
];

export const STOP_COMMAND = { id: 'cutune.palette.stop', serverCommand: 'cutune.stopTuning' };
export const COMPARE_COMMAND = { id: 'cutune.palette.compare', serverCommand: 'cutune.compare' };
export const SHOW_PROFILE_COMMAND = { id: 'cutune.palette.showProfile', serverCommand: 'cutune.showProfile' };
export const SHOW_REPORT_COMMAND = { id: 'cutune.palette.showReport', serverCommand: 'cutune.showReport' };
export const PROFILE_COMMAND = 'cutune.palette.profile';
export const RESTART_COMMAND = 'cutune.palette.restartServer';
export const SHOW_OUTPUT_COMMAND = 'cutune.palette.showOutput';

/** Every server command id the palette commands send. */
export const SERVER_COMMANDS: readonly string[] = [
  ...KERNEL_COMMANDS.map((c) => c.serverCommand),
  STOP_COMMAND.serverCommand,
  SHOW_PROFILE_COMMAND.serverCommand,
  COMPARE_COMMAND.serverCommand,
  SHOW_REPORT_COMMAND.serverCommand,
];

/** Documents the server analyses: by language id, or by extension whatever the language. */
export function isCudaDocument(document: vscode.TextDocument): boolean {
  return document.languageId === 'cuda-cpp' || /\.cuh?$/.test(document.uri.path);
}

/** The server's document symbols of kernel definitions carry this detail. */
const KERNEL_DETAIL = '__global__';

function kernelDefinitions(symbols: readonly vscode.DocumentSymbol[]): vscode.DocumentSymbol[] {
  return symbols.filter((s) => s.detail === KERNEL_DETAIL);
}

/**
 * The argument naming the kernel the user means: the cursor's, when it is inside a kernel or
 * when the file's kernels are unknown (the server then decides); the only kernel of the file;
 * else the one the user picks. Undefined when the user cancels the pick.
 */
export async function kernelArgument(
  editor: vscode.TextEditor,
  symbols: readonly vscode.DocumentSymbol[],
  pick: (kernels: string[]) => Thenable<string | undefined>,
): Promise<CommandArgument | undefined> {
  const uri = editor.document.uri.toString();
  const cursor = editor.selection.active;
  const kernels = kernelDefinitions(symbols);
  if (kernels.length === 0 || kernels.some((k) => k.range.contains(cursor))) {
    // VS Code's positions and the protocol's (UTF-16, the only encoding vscode-languageclient
    // offers) count the same way.
    return { uri, position: { line: cursor.line, character: cursor.character } };
  }
  if (kernels.length === 1) {
    return { uri, kernel: kernels[0].name };
  }
  const chosen = await pick(kernels.map((k) => k.name));
  return chosen === undefined ? undefined : { uri, kernel: chosen };
}

/** `cutune.compare`'s argument: the original kernel, and the file of the other implementation
 *  (the server takes its kernel of the same name, else its only kernel). */
export interface CompareArgument extends CommandArgument {
  candidate: string;
}

/** A server command's argument: a kernel, a file (`cutune.showProfile`), a comparison, or
 *  nothing (`{}`: stop every run). */
export type ServerArgument = CommandArgument | CompareArgument | Record<string, never>;

/** Sends `workspace/executeCommand`; rejects with the server's error. */
export type SendCommand = (command: string, argument: ServerArgument) => Promise<unknown>;

/**
 * The argument naming the kernel of the active CUDA editor that the user means; undefined, once
 * said, without a CUDA editor (`missing` says what to open, for what), or when the user cancels
 * the pick (`placeHolder` asks which kernel).
 */
export async function activeKernelArgument(missing: string, placeHolder: string): Promise<CommandArgument | undefined> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || !isCudaDocument(editor.document)) {
    void vscode.window.showWarningMessage(`cutune: open a CUDA file (.cu, .cuh) and put the cursor in ${missing}.`);
    return undefined;
  }
  const symbols = await documentSymbols(editor.document.uri);
  return kernelArgument(editor, symbols, (kernels) => vscode.window.showQuickPick(kernels, { placeHolder }));
}

/** Runs a kernel command on the active editor's kernel, or says why it cannot. */
export async function runKernelCommand(command: KernelCommand, send: SendCommand): Promise<void> {
  const argument = await activeKernelArgument(`a kernel to ${command.verb} it`, `Kernel to ${command.verb}`);
  if (argument === undefined) {
    return;
  }
  await sendReportingErrors(send, command.serverCommand, argument, `cannot ${command.verb} the kernel`);
}

/** Runs another implementation (a file the user picks) against the active editor's kernel. */
export async function runCompare(send: SendCommand): Promise<void> {
  const argument = await activeKernelArgument('the kernel to compare another implementation with', 'Kernel to compare with');
  if (argument === undefined) {
    return;
  }
  const chosen = await vscode.window.showOpenDialog({
    canSelectMany: false,
    filters: { CUDA: ['cu', 'cuh'] },
    openLabel: 'Compare',
    title: 'The other implementation: a kernel with the same parameters',
  });
  if (chosen === undefined || chosen.length === 0) {
    return;
  }
  await sendReportingErrors(send, COMPARE_COMMAND.serverCommand, { ...argument, candidate: chosen[0].toString() }, 'cannot compare');
}

/** Stops every tuning run of the session. */
export async function runStop(send: SendCommand): Promise<void> {
  await sendReportingErrors(send, STOP_COMMAND.serverCommand, {}, 'cannot stop tuning');
}

async function sendReportingErrors(send: SendCommand, command: string, argument: ServerArgument, failure: string): Promise<void> {
  try {
    await send(command, argument);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    void vscode.window.showErrorMessage(`cutune: ${failure}: ${why}`);
  }
}

/** The document's symbols from the providers (the server's, for CUDA); empty when none answer. */
async function documentSymbols(uri: vscode.Uri): Promise<vscode.DocumentSymbol[]> {
  const symbols = await vscode.commands.executeCommand<(vscode.DocumentSymbol | vscode.SymbolInformation)[] | undefined>(
    'vscode.executeDocumentSymbolProvider',
    uri,
  );
  // Providers may answer with flat SymbolInformation; only DocumentSymbols carry the detail.
  return (symbols ?? []).filter((s): s is vscode.DocumentSymbol => 'detail' in s && 'range' in s);
}
