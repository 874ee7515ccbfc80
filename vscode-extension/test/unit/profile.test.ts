/** "cutune: Show profile" and "cutune: Profile program": what is listed, opened and run. */

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import type { ServerArgument } from '../../src/commands';
import { profileCommandLine, profileItems, runProfile, runShowProfile, type StoredProfile } from '../../src/profile';
import { editorAt } from '../editors';
import { Uri, stub } from '../stub/vscode';

beforeEach(() => stub.reset());

const PROFILE: StoredProfile = {
  origin: 'python3 train.py',
  profiled_at: 0,
  gpu_ns: 5_000_000,
  kernels: [
    { display: 'scale_rows', launches: 20, total_ns: 2_600_000, share: 0.52, file: '/work/ops/scale.cu', line: 5, kernel: 'scale_rows' },
    { display: 'softmax_warp_forward', launches: 1, total_ns: 830_000, share: 0.166, file: null, line: null, kernel: null },
  ],
};

function answering(answer: unknown) {
  const sent: { command: string; argument: ServerArgument }[] = [];
  const send = async (command: string, argument: ServerArgument) => {
    sent.push({ command, argument });
    return answer;
  };
  return { sent, send };
}

test('each kernel is an item with its share, time and launches, and where the workspace defines it', () => {
  stub.workspaceFolders = [{ uri: Uri.file('/work') }];
  assert.deepEqual(profileItems(PROFILE), [
    { label: '52.0%  scale_rows', description: '2.60 ms · 20 launches', detail: 'ops/scale.cu:5', location: { file: '/work/ops/scale.cu', line: 4 } },
    { label: '16.6%  softmax_warp_forward', description: '830.0 µs · 1 launch', detail: 'not in the workspace' },
  ]);
});

test('the picked kernel opens at its definition; the profile asked for is the active file\'s workspace', async () => {
  stub.activeTextEditor = editorAt('/work/ops/scale.cu', 0, 0);
  stub.quickPick = (labels) => labels[0];
  const { sent, send } = answering(PROFILE);
  await runShowProfile(send);
  assert.deepEqual(sent, [{ command: 'cutune.showProfile', argument: { uri: 'file:///work/ops/scale.cu' } }]);
  assert.deepEqual(stub.quickPicks, [['52.0%  scale_rows', '16.6%  softmax_warp_forward']]);
  assert.deepEqual(stub.shownDocuments, [{ path: '/work/ops/scale.cu', line: 4 }]);
});

test('without a profile, the user is told how to make one', async () => {
  stub.workspaceFolders = [{ uri: Uri.file('/work') }];
  await runShowProfile(answering(null).send);
  assert.equal(stub.quickPicks.length, 0);
  assert.match(stub.messages[0].text, /no profile yet\. Run "cutune: Profile program"/);
});

test('the profile command runs the setting under cutune profile, quoted for the shell', () => {
  assert.equal(profileCommandLine('/opt/cutune/bin/cutune', '/work', 'python train.py --steps 10'), '/opt/cutune/bin/cutune profile --root /work -- python train.py --steps 10');
  assert.equal(profileCommandLine('/my tools/cutune', "/it's here", './app'), "'/my tools/cutune' profile --root '/it'\\''s here' -- ./app");
});

test('without cutune.profileCommand, Profile program says what to set and offers the setting', async () => {
  stub.workspaceFolders = [{ uri: Uri.file('/work') }];
  stub.warningChoice = 'Open Settings';
  await runProfile('/usr/bin/cutune', answering(null).send);
  assert.match(stub.messages[0].text, /cannot profile: set cutune.profileCommand/);
  assert.deepEqual(stub.messages[0].actions, ['Open Settings']);
  assert.deepEqual(stub.executed, [{ command: 'workbench.action.openSettings', args: ['cutune.profileCommand'] }]);
});
