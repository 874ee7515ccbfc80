/** Palette commands: which kernel, what is sent, and what the user is told. */

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import { KERNEL_COMMANDS, kernelArgument, runCompare, runKernelCommand, runStop, type ServerArgument, type KernelCommand } from '../../src/commands';
import { editorAt, kernelSymbol } from '../editors';
import { stub } from '../stub/vscode';

beforeEach(() => stub.reset());

const FILE = '/work/k.cu';
const URI = 'file:///work/k.cu';
const SYMBOLS = [kernelSymbol('scale', 2, 10), kernelSymbol('square', 12, 14, '__device__'), kernelSymbol('reduce', 16, 30)];
const noPick = () => Promise.reject(new Error('no pick expected'));

function command(id: string): KernelCommand {
  const found = KERNEL_COMMANDS.find((c) => c.id === id);
  assert.ok(found);
  return found;
}

/** Records what would go to the server. */
function recorder(failure?: Error) {
  const sent: { command: string; argument: ServerArgument }[] = [];
  const send = async (command: string, argument: ServerArgument) => {
    sent.push({ command, argument });
    if (failure) {
      throw failure;
    }
    return null;
  };
  return { sent, send };
}

test('inside a kernel, the argument is the cursor position', async () => {
  const argument = await kernelArgument(editorAt(FILE, 5, 7), SYMBOLS, noPick);
  assert.deepEqual(argument, { uri: URI, position: { line: 5, character: 7 } });
});

test('with no kernels known, the position goes to the server, which decides', async () => {
  assert.deepEqual(await kernelArgument(editorAt(FILE, 40, 0), [], noPick), { uri: URI, position: { line: 40, character: 0 } });
});

test('outside every kernel of a file with one kernel, that kernel is named', async () => {
  const symbols = [kernelSymbol('scale', 2, 10), kernelSymbol('square', 12, 14, '__device__')];
  assert.deepEqual(await kernelArgument(editorAt(FILE, 13, 0), symbols, noPick), { uri: URI, kernel: 'scale' });
});

test('outside every kernel of a file with several, the user picks one, or cancels', async () => {
  const offered: string[][] = [];
  const picked = await kernelArgument(editorAt(FILE, 13, 0), SYMBOLS, async (names) => {
    offered.push(names);
    return 'reduce';
  });
  assert.deepEqual(offered, [['scale', 'reduce']]);
  assert.deepEqual(picked, { uri: URI, kernel: 'reduce' });
  assert.equal(await kernelArgument(editorAt(FILE, 13, 0), SYMBOLS, async () => undefined), undefined);
});

test('each kernel command sends its server command with the editor state', async () => {
  stub.activeTextEditor = editorAt(FILE, 3, 4);
  stub.builtinCommands.set('vscode.executeDocumentSymbolProvider', () => SYMBOLS);
  const { sent, send } = recorder();
  for (const c of KERNEL_COMMANDS) {
    await runKernelCommand(c, send);
  }
  const argument = { uri: URI, position: { line: 3, character: 4 } };
  assert.deepEqual(sent, [
    { command: 'cutune.templatize', argument },
    { command: 'cutune.tune', argument },
    { command: 'cutune.verify', argument },
    { command: 'cutune.applyBest', argument },
  ]);
  assert.deepEqual(stub.executed.map((e) => e.command), Array(4).fill('vscode.executeDocumentSymbolProvider'));
  assert.deepEqual(stub.messages, []);
});

test('the quick pick is offered when the cursor is between kernels', async () => {
  stub.activeTextEditor = editorAt(FILE, 13, 0);
  stub.builtinCommands.set('vscode.executeDocumentSymbolProvider', () => SYMBOLS);
  stub.quickPick = (items) => items[1];
  const { sent, send } = recorder();
  await runKernelCommand(command('cutune.palette.tune'), send);
  assert.deepEqual(stub.quickPicks, [['scale', 'reduce']]);
  assert.deepEqual(sent, [{ command: 'cutune.tune', argument: { uri: URI, kernel: 'reduce' } }]);
});

test('a .cuh file counts as CUDA whatever its language id', async () => {
  stub.activeTextEditor = editorAt('/work/tile.cuh', 0, 0, 'cpp');
  const { sent, send } = recorder();
  await runKernelCommand(command('cutune.palette.verify'), send);
  assert.deepEqual(sent, [{ command: 'cutune.verify', argument: { uri: 'file:///work/tile.cuh', position: { line: 0, character: 0 } } }]);
});

test('without a CUDA editor, the command says so and sends nothing', async () => {
  const { sent, send } = recorder();
  await runKernelCommand(command('cutune.palette.tune'), send);
  stub.activeTextEditor = editorAt('/work/setup.py', 0, 0, 'python');
  await runKernelCommand(command('cutune.palette.templatize'), send);
  assert.deepEqual(sent, []);
  assert.deepEqual(stub.messages, [
    { severity: 'warning', text: 'cutune: open a CUDA file (.cu, .cuh) and put the cursor in a kernel to tune it.', actions: [] },
    { severity: 'warning', text: 'cutune: open a CUDA file (.cu, .cuh) and put the cursor in a kernel to templatize it.', actions: [] },
  ]);
});

test('stop needs no editor and stops every run', async () => {
  const { sent, send } = recorder();
  await runStop(send);
  assert.deepEqual(sent, [{ command: 'cutune.stopTuning', argument: {} }]);
});

test("the server's refusal is shown as an error", async () => {
  stub.activeTextEditor = editorAt(FILE, 3, 4);
  const { send } = recorder(new Error('the spec has no problem sizes'));
  await runKernelCommand(command('cutune.palette.tune'), send);
  assert.deepEqual(stub.messages, [{ severity: 'error', text: 'cutune: cannot tune the kernel: the spec has no problem sizes', actions: [] }]);
});

test('compare sends the kernel and the implementation the user picks, and nothing when the pick is cancelled', async () => {
  stub.activeTextEditor = editorAt(FILE, 3, 4);
  stub.builtinCommands.set('vscode.executeDocumentSymbolProvider', () => SYMBOLS);
  const { sent, send } = recorder();
  await runCompare(send);
  assert.deepEqual(sent, []);
  stub.openDialog = ['/work/scale_fast.cu'];
  await runCompare(send);
  assert.deepEqual(sent, [{ command: 'cutune.compare', argument: { uri: URI, position: { line: 3, character: 4 }, candidate: 'file:///work/scale_fast.cu' } }]);
  assert.deepEqual(stub.openDialogs.map((o) => (o as { filters: object }).filters), [{ CUDA: ['cu', 'cuh'] }, { CUDA: ['cu', 'cuh'] }]);
  stub.activeTextEditor = editorAt('/work/setup.py', 0, 0, 'python');
  await runCompare(send);
  assert.equal(sent.length, 1);
  assert.match(stub.messages[0].text, /open a CUDA file .* to compare another implementation with/);
});
