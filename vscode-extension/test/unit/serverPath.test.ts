/** Finding the server binary, and the message when there is none. */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';

import { locateServer, type ServerLookup } from '../../src/serverPath';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cutune-server-path-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

function file(relative: string, mode = 0o755): string {
  const full = path.join(root, relative);
  fs.mkdirSync(path.dirname(full), { recursive: true });
  fs.writeFileSync(full, '#!/bin/sh\n', { mode });
  return full;
}

const extension = path.join(root, 'extension');
const workspace = path.join(root, 'workspace');
const emptyDir = path.join(root, 'empty');
fs.mkdirSync(emptyDir);
const onPath = file('path-bin/cutune');
const bundled = path.join(extension, 'bin', 'cutune');

function lookup(overrides: Partial<ServerLookup>): ServerLookup {
  return { configured: '', extensionPath: extension, workspaceFolder: workspace, searchPath: emptyDir, platform: 'linux', ...overrides };
}

test('a configured absolute path is used as it is', () => {
  const configured = file('custom/cutune');
  assert.deepEqual(locateServer(lookup({ configured, searchPath: path.dirname(onPath) })), { found: true, command: configured });
});

test('a configured relative path is taken from the workspace folder', () => {
  const inWorkspace = file('workspace/target/release/cutune');
  assert.deepEqual(locateServer(lookup({ configured: 'target/release/cutune' })), { found: true, command: inWorkspace });
});

test('a configured path that does not exist is an error naming it, with no fallback', () => {
  const missing = path.join(root, 'nowhere', 'cutune');
  const location = locateServer(lookup({ configured: missing, searchPath: path.dirname(onPath) }));
  assert.deepEqual(location, { found: false, tried: [missing], message: `cutune.server.path: ${missing} does not exist.` });
});

test('a configured file that cannot be executed, or a folder, is an error saying so', () => {
  const plain = file('plain/cutune', 0o644);
  const notExecutable = locateServer(lookup({ configured: plain }));
  assert.equal(notExecutable.found, false);
  assert.match(!notExecutable.found ? notExecutable.message : '', /plain\/cutune is not executable\.$/);
  const folder = locateServer(lookup({ configured: emptyDir }));
  assert.match(!folder.found ? folder.message : '', /empty is not a file\.$/);
});

test('~ in a configured path is the home directory', () => {
  const location = locateServer(lookup({ configured: '~/surely-not-here/cutune' }));
  assert.deepEqual(location.found ? [] : location.tried, [path.join(os.homedir(), 'surely-not-here/cutune')]);
});

test('empty: the bundled binary, else cutune on PATH', () => {
  const searchPath = [emptyDir, '', path.dirname(onPath)].join(':');
  assert.deepEqual(locateServer(lookup({ searchPath })), { found: true, command: onPath });
  file('extension/bin/cutune');
  try {
    assert.deepEqual(locateServer(lookup({ searchPath })), { found: true, command: bundled });
  } finally {
    fs.rmSync(bundled);
  }
});

test('empty and nothing found: the message names the bundled path and PATH, and every path tried is listed', () => {
  const location = locateServer(lookup({ searchPath: `${emptyDir}:${workspace}` }));
  assert.deepEqual(location, {
    found: false,
    tried: [bundled, path.join(emptyDir, 'cutune'), path.join(workspace, 'cutune')],
    message: `no cutune bundled at ${bundled} and none on PATH. Install cutune (cargo install --path server) or set cutune.server.path.`,
  });
});

test('on Windows the binary is cutune.exe', () => {
  const location = locateServer(lookup({ platform: 'win32', searchPath: undefined }));
  assert.deepEqual(location.found ? [] : location.tried, [path.join(extension, 'bin', 'cutune.exe')]);
});
