/** The settings as the server receives them: initializationOptions, configuration, changes. */

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import type { ConfigurationParams } from 'vscode-languageclient';

import { answerConfiguration, changedSettings, clientOptions } from '../../src/client';
import { stub } from '../stub/vscode';

beforeEach(() => stub.reset());

const DEFAULTS = { device: 0, strategy: 'model', budget: 200, nvrtcPath: '', resultsLocation: '', replay: '' };

function options() {
  const sent: { method: string; params: unknown }[] = [];
  const channel = { appendLine: () => {} } as never;
  const built = clientOptions(channel, async (method, params) => {
    sent.push({ method, params });
  });
  return { built, sent };
}

test('initializationOptions are the server settings with their defaults, without server.path and trace', () => {
  const init = options().built.initializationOptions as () => unknown;
  assert.deepEqual(init(), DEFAULTS);
});

test('initializationOptions are read at each start, so a restart sends the current settings', () => {
  const init = options().built.initializationOptions as () => unknown;
  stub.settings.set('cutune.device', 1);
  stub.settings.set('cutune.strategy', 'genetic');
  stub.settings.set('cutune.replay', '/data/t4/gemm.json');
  stub.settings.set('cutune.server.path', '/opt/cutune');
  stub.settings.set('cutune.trace.server', 'verbose');
  assert.deepEqual(init(), { ...DEFAULTS, device: 1, strategy: 'genetic', replay: '/data/t4/gemm.json' });
});

test('workspace/configuration for section cutune is answered with the same object; other sections by VS Code', async () => {
  stub.settings.set('cutune.budget', 50);
  const params: ConfigurationParams = {
    items: [{ section: 'editor' }, { section: 'cutune' }, { section: 'cutune', scopeUri: 'file:///w/a.cu' }, {}],
  };
  const fromVsCode = ['editor settings', 'nested cutune', 'nested cutune', 'everything'];
  const answers = await answerConfiguration(params, () => fromVsCode);
  const cutune = { ...DEFAULTS, budget: 50 };
  assert.deepEqual(answers, ['editor settings', cutune, cutune, 'everything']);
});

test('the configuration middleware passes VS Code errors on', async () => {
  const error = { code: -32603, message: 'no' };
  assert.equal(await answerConfiguration({ items: [{ section: 'cutune' }] }, () => error), error);
});

test('a settings change is sent as didChangeConfiguration with the server settings under cutune', async () => {
  const { built, sent } = options();
  stub.settings.set('cutune.budget', 1000);
  await built.middleware?.workspace?.didChangeConfiguration?.(['cutune'], async () => {});
  assert.deepEqual(sent, [{ method: 'workspace/didChangeConfiguration', params: { settings: { cutune: { ...DEFAULTS, budget: 1000 } } } }]);
  assert.deepEqual(changedSettings(), sent[0].params);
});

test('the client keeps CUDA documents and tuning specs in sync, and keeps progress and inlay hints', () => {
  const { built } = options();
  assert.deepEqual(built.documentSelector, [
    { scheme: 'file', language: 'cuda-cpp' },
    { scheme: 'untitled', language: 'cuda-cpp' },
    { scheme: 'file', pattern: '**/*.cutune.toml' },
  ]);
  assert.deepEqual(built.synchronize, { configurationSection: 'cutune' });
  // Middleware for progress or inlay hints would replace vscode-languageclient's own handling;
  // executeCommand passes every command on but the report's (test/unit/report.test.ts).
  assert.deepEqual(Object.keys(built.middleware ?? {}).sort(), ['executeCommand', 'workspace']);
  assert.deepEqual(Object.keys(built.middleware?.workspace ?? {}).sort(), ['configuration', 'didChangeConfiguration']);
});

test('commands the server carries out pass through the middleware unchanged, but the report\'s', async () => {
  const { built } = options();
  const passed: { command: string; args: unknown[] }[] = [];
  const next = async (command: string, args: unknown[]) => {
    passed.push({ command, args });
    return { started: 'k' };
  };
  const executeCommand = built.middleware?.executeCommand;
  assert.ok(executeCommand);
  assert.deepEqual(await executeCommand('cutune.tune', [{ uri: 'file:///k.cu', kernel: 'k' }], next), { started: 'k' });
  assert.deepEqual(passed, [{ command: 'cutune.tune', args: [{ uri: 'file:///k.cu', kernel: 'k' }] }]);
});
