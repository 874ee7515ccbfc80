/** The server's lifetime as the user sees it: status item, errors, restarts, commands. */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, beforeEach, test } from 'node:test';

import * as vscode from 'vscode';

import { Controller, type ClientState, type ServerClient, type ServerLaunch } from '../../src/controller';
import { editorAt } from '../editors';
import { LanguageStatusSeverity, stub, window } from '../stub/vscode';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cutune-controller-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));
const binary = path.join(root, 'cutune');
fs.writeFileSync(binary, '#!/bin/sh\n', { mode: 0o755 });
const extensionPath = path.join(root, 'extension');

/** A language client that records what the controller does with it. */
class FakeClient implements ServerClient {
  started = 0;
  disposed = 0;
  sent: { command: string; argument: unknown }[] = [];
  notificationHandlers = new Map<string, (params: unknown) => void>();
  stateHandler: (state: ClientState) => void = () => {};

  constructor(
    readonly launch: ServerLaunch,
    private readonly startFailure?: Error,
  ) {}
  async start() {
    this.started++;
    this.stateHandler('starting');
    if (this.startFailure) {
      throw this.startFailure;
    }
    this.stateHandler('running');
  }
  async dispose() {
    this.disposed++;
    this.stateHandler('stopped');
  }
  sendCommand = async (command: string, argument: unknown) => {
    this.sent.push({ command, argument });
    return null;
  };
  onNotification(method: string, handler: (params: unknown) => void) {
    this.notificationHandlers.set(method, handler);
  }
  onStateChange(handler: (state: ClientState) => void) {
    this.stateHandler = handler;
  }
  notify(method: string, params: unknown) {
    this.notificationHandlers.get(method)?.(params);
  }
}

function setUp(startFailure?: Error) {
  const clients: FakeClient[] = [];
  const output = window.createOutputChannel('cutune') as unknown as vscode.OutputChannel;
  const controller = new Controller(
    extensionPath,
    (launch) => {
      const client = new FakeClient(launch, startFailure);
      clients.push(client);
      return client;
    },
    output,
  );
  const item = () => {
    const [only] = stub.statusItems;
    return { text: only.text, detail: only.detail, severity: only.severity, busy: only.busy };
  };
  return { controller, clients, item };
}

beforeEach(() => {
  stub.reset();
  stub.settings.set('cutune.server.path', binary);
});

test('the server starts as `PATH lsp` in the workspace folder, and says "starting" until its first status', async () => {
  stub.workspaceFolders = [{ uri: vscode.Uri.file('/work/project') as never }];
  const { controller, clients, item } = setUp();
  await controller.start();
  assert.equal(clients.length, 1);
  assert.deepEqual([clients[0].launch.command, clients[0].launch.args, clients[0].launch.cwd], [binary, ['lsp'], '/work/project']);
  assert.deepEqual(item(), { text: 'cutune: starting', detail: 'the language server is running; waiting for its device and tuning state', severity: LanguageStatusSeverity.Information, busy: false });
  const [statusItem] = stub.statusItems;
  assert.deepEqual([statusItem.id, statusItem.selector, statusItem.name], ['cutune.status', { language: 'cuda-cpp' }, 'cutune']);
  assert.deepEqual(statusItem.command, { title: 'Show output', command: 'cutune.palette.showOutput' });

  clients[0].notify('cutune/status', { device: 'H100', state: 'idle', message: 'NVIDIA H100, sm_90' });
  assert.deepEqual(item(), { text: 'cutune: H100 · idle', detail: 'NVIDIA H100, sm_90', severity: LanguageStatusSeverity.Information, busy: false });
  clients[0].notify('cutune/status', { device: null, state: 'no-device', message: 'no driver' });
  assert.deepEqual(item(), { text: 'cutune: no CUDA device', detail: 'no driver', severity: LanguageStatusSeverity.Warning, busy: false });
  clients[0].notify('cutune/status', { state: 'tuning' });
  assert.equal(item().text, 'cutune: no CUDA device', 'a malformed status changes nothing');
  assert.match(stub.output.at(-1) ?? '', /ignoring a malformed cutune\/status/);
  controller.dispose();
});

test('a missing binary is an error naming the path, with a way to the setting', async () => {
  const missing = path.join(root, 'missing', 'cutune');
  stub.settings.set('cutune.server.path', missing);
  stub.errorChoice = 'Open Settings';
  const { controller, clients, item } = setUp();
  await controller.start();
  assert.equal(clients.length, 0);
  const message = `cutune: cannot start the language server: cutune.server.path: ${missing} does not exist.`;
  assert.deepEqual(stub.messages, [{ severity: 'error', text: message, actions: ['Open Settings', 'Show Output'] }]);
  assert.deepEqual(item(), { text: 'cutune: server not running', detail: message, severity: LanguageStatusSeverity.Error, busy: false });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(stub.executed, [{ command: 'workbench.action.openSettings', args: ['cutune.server.path'] }]);

  // The palette commands then say the server is not running rather than fail silently.
  stub.activeTextEditor = editorAt('/work/k.cu', 0, 0);
  await vscode.commands.executeCommand('cutune.palette.tune');
  assert.match(stub.messages.at(-1)?.text ?? '', /cannot tune the kernel: the language server is not running/);
  controller.dispose();
});

test('a binary that fails to start is an error naming it, and its client is let go', async () => {
  const { controller, clients, item } = setUp(new Error('spawn EACCES'));
  await controller.start();
  assert.equal(clients[0].disposed, 1);
  const message = `cutune: cannot start the language server ${binary}: spawn EACCES`;
  assert.deepEqual(stub.messages.map((m) => m.text), [message]);
  assert.equal(item().severity, LanguageStatusSeverity.Error);
  controller.dispose();
});

test('a server that stops is shown as not running; one the client restarts is starting again', async () => {
  const { controller, clients, item } = setUp();
  await controller.start();
  clients[0].notify('cutune/status', { device: 'H100', state: 'idle', message: '' });
  clients[0].stateHandler('stopped');
  assert.equal(item().text, 'cutune: server not running');
  assert.equal(item().severity, LanguageStatusSeverity.Error);
  assert.match(item().detail ?? '', /Restart language server/);
  clients[0].stateHandler('starting');
  assert.deepEqual([item().text, item().busy], ['cutune: starting', true]);
  clients[0].stateHandler('running');
  assert.deepEqual([item().text, item().busy], ['cutune: starting', false]);
  clients[0].notify('cutune/status', { device: 'H100', state: 'tuning', message: 'scale 3/200' });
  assert.deepEqual([item().text, item().busy], ['cutune: tuning scale 3/200', true]);
  controller.dispose();
});

test('changing cutune.server.path restarts the server with the new path; other settings do not', async () => {
  const { controller, clients, item } = setUp();
  await controller.start();
  stub.changeSettings({ 'cutune.budget': 20 });
  assert.equal(clients.length, 1);

  const other = path.join(root, 'other-cutune');
  fs.writeFileSync(other, '#!/bin/sh\n', { mode: 0o755 });
  stub.changeSettings({ 'cutune.server.path': other });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(clients.length, 2);
  assert.equal(clients[0].disposed, 1);
  assert.equal(clients[1].launch.command, other);
  // The old client's last words are not news.
  clients[0].stateHandler('stopped');
  clients[0].notify('cutune/status', { device: 'old', state: 'idle', message: '' });
  assert.equal(item().text, 'cutune: starting');
  controller.dispose();
});

test('the palette commands are registered and reach the server; restart and show output work', async () => {
  const { controller, clients } = setUp();
  await controller.start();
  assert.deepEqual(stub.registered().sort(), [
    'cutune.palette.applyBest',
    'cutune.palette.compare',
    'cutune.palette.profile',
    'cutune.palette.restartServer',
    'cutune.palette.showOutput',
    'cutune.palette.showProfile',
    'cutune.palette.showReport',
    'cutune.palette.stop',
    'cutune.palette.templatize',
    'cutune.palette.tune',
    'cutune.palette.verify',
  ]);
  stub.activeTextEditor = editorAt('/work/k.cu', 1, 2);
  await vscode.commands.executeCommand('cutune.palette.applyBest');
  await vscode.commands.executeCommand('cutune.palette.stop');
  await vscode.commands.executeCommand('cutune.palette.showProfile');
  assert.deepEqual(clients[0].sent, [
    { command: 'cutune.applyBest', argument: { uri: 'file:///work/k.cu', position: { line: 1, character: 2 } } },
    { command: 'cutune.stopTuning', argument: {} },
    { command: 'cutune.showProfile', argument: { uri: 'file:///work/k.cu' } },
  ]);
  await vscode.commands.executeCommand('cutune.palette.showOutput');
  assert.equal(stub.outputShown, 1);
  await vscode.commands.executeCommand('cutune.palette.restartServer');
  assert.deepEqual([clients.length, clients[0].disposed, clients[1].started], [2, 1, 1]);
  controller.dispose();
  assert.deepEqual(stub.registered(), []);
});
