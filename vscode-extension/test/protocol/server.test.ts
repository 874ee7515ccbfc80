/**
 * The real `cutune lsp` accepts what the extension sends: initializationOptions and settings
 * built from the settings, and executeCommand arguments built from the editor.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';

import { ErrorCodes, ResponseError } from 'vscode-jsonrpc';
import type { DocumentSymbol as ProtocolSymbol, InitializeResult } from 'vscode-languageserver-protocol';
import type * as vscode from 'vscode';

import manifest from '../../package.json';
import { changedSettings, currentSettings } from '../../src/client';
import { COMPARE_COMMAND, KERNEL_COMMANDS, SERVER_COMMANDS, STOP_COMMAND, kernelArgument, type ServerArgument } from '../../src/commands';
import { profileItems, type StoredProfile } from '../../src/profile';
import { parseStatus } from '../../src/status';
import { editorAt } from '../editors';
import { DocumentSymbol, Position, Range, Uri, stub } from '../stub/vscode';
import { serverBinary, Session } from './session';

const FIXTURE = path.join(__dirname, '../../../tests/e2e/fixtures/kernels.cu');
const RECORDING = path.join(__dirname, '../../../tests/fixtures/replay/rmsnorm_8192_h100.t4.json');
/** The fixture's `scale` kernel spans lines 4 to 8 (0-based); line 0 is a #define. */
const IN_SCALE = { line: 6, character: 4 };

serverBinary(); // Fails the whole file at once when the binary is missing.

beforeEach(() => stub.reset());

function toStub(symbol: ProtocolSymbol): vscode.DocumentSymbol {
  const range = (r: ProtocolSymbol['range']) => new Range(new Position(r.start.line, r.start.character), new Position(r.end.line, r.end.character));
  return new DocumentSymbol(symbol.name, symbol.detail ?? '', symbol.kind, range(symbol.range), range(symbol.selectionRange)) as unknown as vscode.DocumentSymbol;
}

test('initialize accepts the default settings as initializationOptions, and the session ends cleanly', async () => {
  const session = Session.start();
  let result: InitializeResult;
  try {
    result = await session.initialize(currentSettings());
  } finally {
    // A failed check below must not leave the server running: the runner would wait for it.
    assert.equal(await session.end(), 0);
  }
  assert.equal(result.serverInfo?.name, 'cutune');
  assert.equal(result.capabilities.hoverProvider, true);
  assert.equal(result.capabilities.documentSymbolProvider, true);
  // `quickfix`: the spec's `?` values.
  assert.deepEqual(result.capabilities.codeActionProvider, { codeActionKinds: ['refactor.rewrite', 'refactor', 'quickfix'], resolveProvider: true });
  assert.deepEqual(session.errors(), []);
});

test('initialize accepts every setting changed from its default', async () => {
  const session = Session.start();
  const missingNvrtc = path.join(session.folder, 'libnvrtc.so');
  stub.settings.set('cutune.device', 1);
  stub.settings.set('cutune.strategy', 'annealing');
  stub.settings.set('cutune.budget', 3);
  stub.settings.set('cutune.nvrtcPath', missingNvrtc);
  stub.settings.set('cutune.resultsLocation', path.join(session.folder, 'results'));
  stub.settings.set('cutune.replay', RECORDING);
  const settings = currentSettings();
  assert.deepEqual(Object.keys(settings).sort(), ['budget', 'device', 'nvrtcPath', 'replay', 'resultsLocation', 'strategy']);
  await session.initialize(settings);
  // A request answered after `initialized` shows the server took the settings and carried on.
  const opened = await session.open(FIXTURE);
  const symbols = await session.connection.sendRequest<ProtocolSymbol[]>('textDocument/documentSymbol', { textDocument: { uri: opened.uri } });
  assert.ok(symbols.length > 0);
  assert.equal(await session.end(), 0);
  // The server may well say that the NVRTC library is not there; nothing else is wrong.
  assert.deepEqual(
    session.errors().filter((message) => !message.includes(missingNvrtc)),
    [],
  );
});

let session: Session;
let initialized: InitializeResult;
let document: { uri: string; file: string };

/** One session for the tests below: they only read the server's state. */
before(async () => {
  session = Session.start();
  initialized = await session.initialize(currentSettings());
  document = await session.open(FIXTURE);
});

after(async () => {
  assert.equal(await session.end(), 0);
});

test('a settings change, as the extension sends it, is taken; configuration requests get the same settings', async () => {
  stub.settings.set('cutune.budget', 17);
  const before = session.requests.length;
  await session.connection.sendNotification('workspace/didChangeConfiguration', changedSettings());
  const symbols = await session.connection.sendRequest<ProtocolSymbol[]>('textDocument/documentSymbol', { textDocument: { uri: document.uri } });
  assert.ok(symbols.length > 0, 'the server still answers');
  // The server reads the section back after a change; wait (bounded) for that request.
  const pulled = () => session.requests.slice(before).filter((r) => r.method === 'workspace/configuration');
  for (let waited = 0; pulled().length === 0 && waited < 5_000; waited += 20) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.ok(pulled().length > 0, 'the server asks for the changed settings');
  for (const request of pulled()) {
    const { items } = request.params as { items: { section?: string }[] };
    items.forEach((item, i) => {
      if (item.section === 'cutune') {
        assert.deepEqual((request.answer as unknown[])[i], currentSettings());
      }
    });
  }
  assert.deepEqual(session.errors(), []);
});

test("the server's document symbols mark kernels as the palette commands expect", async () => {
  const symbols = (await session.connection.sendRequest<ProtocolSymbol[]>('textDocument/documentSymbol', { textDocument: { uri: document.uri } })).map(toStub);
  const inScale = await kernelArgument(editorAt(document.file, IN_SCALE.line, IN_SCALE.character), symbols, () => Promise.reject(new Error('no pick')));
  assert.deepEqual(inScale, { uri: document.uri, position: IN_SCALE });
  const offered: string[][] = [];
  const picked = await kernelArgument(editorAt(document.file, 0, 0), symbols, async (kernels) => {
    offered.push(kernels);
    return kernels[1];
  });
  assert.deepEqual(offered, [['scale', 'huge_shared']]);
  assert.deepEqual(picked, { uri: document.uri, kernel: 'huge_shared' });
});

test('no palette command id is one the server advertises (the client registers those)', () => {
  const advertised = initialized.capabilities.executeCommandProvider?.commands ?? [];
  const palette = manifest.contributes.commands.map((c) => c.command);
  assert.deepEqual(
    palette.filter((id) => advertised.includes(id)),
    [],
  );
});

/**
 * Sends a server command as a palette command does. Accepted: any answer but an error saying the
 * method or the arguments are wrong. A command the server does not advertise (yet) must be
 * refused as an unknown method, not half-handled.
 */
async function checkAccepted(t: { diagnostic(message: string): void }, command: string, argument: ServerArgument) {
  const advertised = initialized.capabilities.executeCommandProvider?.commands ?? [];
  try {
    const result = await session.connection.sendRequest('workspace/executeCommand', { command, arguments: [argument] });
    assert.ok(advertised.includes(command), `${command} answered, so the server should advertise it`);
    t.diagnostic(`${command} ${JSON.stringify(argument)} -> ${JSON.stringify(result)}`);
  } catch (error) {
    assert.ok(error instanceof ResponseError, `a JSON-RPC error, not ${error}`);
    if (!advertised.includes(command)) {
      assert.equal(error.code, ErrorCodes.MethodNotFound, `${command} is not advertised: ${error.message}`);
      t.diagnostic(`${command}: not advertised by this server build`);
      return;
    }
    assert.notEqual(error.code, ErrorCodes.InvalidParams, `${command} ${JSON.stringify(argument)} refused as malformed: ${error.message}`);
    assert.notEqual(error.code, ErrorCodes.MethodNotFound, `${command} is advertised but not handled`);
    t.diagnostic(`${command} ${JSON.stringify(argument)} -> error ${error.code}: ${error.message}`);
  }
}

test('kernel commands take the cursor position of the editor', { timeout: 120_000 }, async (t) => {
  const argument = await kernelArgument(editorAt(document.file, IN_SCALE.line, IN_SCALE.character), [], () => Promise.reject(new Error('no pick')));
  assert.deepEqual(argument, { uri: document.uri, position: IN_SCALE });
  for (const command of KERNEL_COMMANDS) {
    await checkAccepted(t, command.serverCommand, argument!);
  }
  await checkAccepted(t, STOP_COMMAND.serverCommand, {});
});

test('kernel commands take a kernel picked by name', { timeout: 120_000 }, async (t) => {
  for (const command of SERVER_COMMANDS) {
    // A comparison names the other implementation too: here the file itself.
    const candidate = command === COMPARE_COMMAND.serverCommand ? { candidate: document.uri } : {};
    await checkAccepted(t, command, { uri: document.uri, kernel: 'scale', ...candidate });
  }
  await checkAccepted(t, STOP_COMMAND.serverCommand, {});
});

test('"Show profile" lists what the server answers for a profiled workspace', async () => {
  const events = [
    { ph: 'X', cat: 'kernel', name: 'scale(float*, float const*, int)', dur: 30 },
    { ph: 'X', cat: 'kernel', name: 'ampere_sgemm_64x32_nn', dur: 10 },
  ];
  fs.writeFileSync(path.join(session.folder, 'trace.json'), JSON.stringify({ traceEvents: events }));
  execFileSync(serverBinary(), ['profile', '--import', 'trace.json'], { cwd: session.folder, stdio: 'pipe' });
  const answer = await session.connection.sendRequest('workspace/executeCommand', { command: 'cutune.showProfile', arguments: [{ uri: document.uri }] });
  stub.workspaceFolders = [{ uri: Uri.file(fs.realpathSync(session.folder)) }];
  const items = profileItems(answer as StoredProfile);
  assert.deepEqual(
    items.map((item) => [item.label, item.description, item.detail]),
    [
      ['75.0%  scale', '30.0 µs · 1 launch', `${path.basename(document.file)}:5`],
      ['25.0%  ampere_sgemm_64x32_nn', '10.0 µs · 1 launch', 'not in the workspace'],
    ],
  );
});

test('every cutune/status the server sent is one the status item understands', () => {
  const statuses = session.notifications.filter((n) => n.method === 'cutune/status');
  for (const status of statuses) {
    assert.ok(parseStatus(status.params), JSON.stringify(status.params));
  }
});
