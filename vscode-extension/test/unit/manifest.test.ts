/** package.json: what VS Code reads before any code runs. */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

import manifest from '../../package.json';
import { COMPARE_COMMAND, KERNEL_COMMANDS, PROFILE_COMMAND, RESTART_COMMAND, SERVER_COMMANDS, SHOW_OUTPUT_COMMAND, SHOW_PROFILE_COMMAND, SHOW_REPORT_COMMAND, STOP_COMMAND } from '../../src/commands';
import { SERVER_SETTING_KEYS } from '../../src/settings';

type Setting = {
  type: string;
  default: unknown;
  description?: string;
  markdownDescription?: string;
  enum?: string[];
  enumDescriptions?: string[];
  minimum?: number;
};
const settings = manifest.contributes.configuration.properties as Record<string, Setting>;

test('the settings are the server path, the trace and the server settings, each described, with the agreed defaults', () => {
  const keys = Object.keys(settings).sort();
  const expected = ['cutune.server.path', 'cutune.trace.server', 'cutune.profileCommand', ...SERVER_SETTING_KEYS.map((k) => `cutune.${k}`)].sort();
  assert.deepEqual(keys, expected);
  for (const [key, setting] of Object.entries(settings)) {
    const description = setting.description ?? setting.markdownDescription ?? '';
    assert.ok(description.length > 20, `${key} has a description`);
    if (setting.enum !== undefined) {
      assert.equal(setting.enumDescriptions?.length, setting.enum.length, `${key} describes each value`);
    }
  }
  const defaults = Object.fromEntries(Object.entries(settings).map(([key, s]) => [key, [s.type, s.default]]));
  assert.deepEqual(defaults, {
    'cutune.server.path': ['string', ''],
    'cutune.device': ['integer', 0],
    'cutune.strategy': ['string', 'model'],
    'cutune.budget': ['integer', 200],
    'cutune.nvrtcPath': ['string', ''],
    'cutune.resultsLocation': ['string', ''],
    'cutune.replay': ['string', ''],
    'cutune.profileCommand': ['string', ''],
    'cutune.trace.server': ['string', 'off'],
  });
  assert.deepEqual(settings['cutune.strategy'].enum, ['brute-force', 'random', 'annealing', 'genetic', 'model']);
  assert.deepEqual(settings['cutune.trace.server'].enum, ['off', 'messages', 'verbose']);
  assert.equal(settings['cutune.budget'].minimum, 1);
  assert.equal(settings['cutune.device'].minimum, 0);
});

test('the palette commands are named "cutune: ..." and none takes a server command id', () => {
  const titles = Object.fromEntries(manifest.contributes.commands.map((c) => [c.command, `${c.category}: ${c.title}`]));
  assert.deepEqual(titles, {
    'cutune.palette.templatize': 'cutune: Templatize kernel',
    'cutune.palette.tune': 'cutune: Tune kernel on GPU',
    'cutune.palette.verify': 'cutune: Verify kernel',
    'cutune.palette.applyBest': 'cutune: Apply best configuration',
    'cutune.palette.compare': 'cutune: Compare kernel with another implementation',
    'cutune.palette.stop': 'cutune: Stop tuning',
    'cutune.palette.restartServer': 'cutune: Restart language server',
    'cutune.palette.showOutput': 'cutune: Show output',
    'cutune.palette.profile': 'cutune: Profile program',
    'cutune.palette.showProfile': 'cutune: Show profile',
    'cutune.palette.showReport': 'cutune: Show tuning report',
  });
  const implemented = [...KERNEL_COMMANDS.map((c) => c.id), STOP_COMMAND.id, COMPARE_COMMAND.id, RESTART_COMMAND, SHOW_OUTPUT_COMMAND, PROFILE_COMMAND, SHOW_PROFILE_COMMAND.id, SHOW_REPORT_COMMAND.id];
  assert.deepEqual(Object.keys(titles).sort(), implemented.sort());
  // vscode-languageclient registers the server's command ids; a second registration would fail.
  assert.deepEqual(
    Object.keys(titles).filter((id) => SERVER_COMMANDS.includes(id)),
    [],
  );
  assert.deepEqual(SERVER_COMMANDS, ['cutune.templatize', 'cutune.tune', 'cutune.verify', 'cutune.applyBest', 'cutune.stopTuning', 'cutune.showProfile', 'cutune.compare', 'cutune.showReport']);
  for (const item of manifest.contributes.menus['editor/context']) {
    assert.ok(item.command in titles, `${item.command} in the context menu is a contributed command`);
  }
});

test('it activates on CUDA files, .cu and .cuh among them, and runs the bundle', () => {
  assert.deepEqual(manifest.activationEvents, ['onLanguage:cuda-cpp']);
  assert.deepEqual(manifest.contributes.languages, [{ id: 'cuda-cpp', aliases: ['CUDA C++'], extensions: ['.cu', '.cuh'] }]);
  assert.equal(manifest.main, './dist/extension.js');
});

test('it refuses untrusted and virtual workspaces, saying why', () => {
  const { untrustedWorkspaces, virtualWorkspaces } = manifest.capabilities;
  assert.equal(untrustedWorkspaces.supported, false);
  assert.match(untrustedWorkspaces.description, /compiles .* and runs them/);
  assert.equal(virtualWorkspaces.supported, false);
});

test('its version is the cutune crate version, and the engine is what vscode-languageclient needs', () => {
  const cargo = fs.readFileSync(path.join(__dirname, '../../../Cargo.toml'), 'utf8');
  const version = /\[workspace\.package\][^[]*?version\s*=\s*"([^"]+)"/.exec(cargo)?.[1];
  assert.equal(manifest.version, version);
  const client = JSON.parse(fs.readFileSync(require.resolve('vscode-languageclient/package.json'), 'utf8'));
  assert.equal(manifest.engines.vscode, client.engines.vscode);
  assert.equal(manifest.devDependencies['@types/vscode'], client.engines.vscode.replace('^', ''));
});
