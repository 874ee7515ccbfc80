/** Where the `cutune` binary that runs the language server is. */

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/** The server's command line after the binary. */
export const SERVER_ARGUMENTS: readonly string[] = ['lsp'];

export interface ServerLookup {
  /** `cutune.server.path`; empty for the default search. */
  configured: string;
  /** The extension's folder: a bundled binary is at `bin/cutune` in it. */
  extensionPath: string;
  /** Relative configured paths are resolved against it. */
  workspaceFolder: string | undefined;
  /** The `PATH` variable to search. */
  searchPath: string | undefined;
  platform: NodeJS.Platform;
}

export type ServerLocation = { found: true; command: string } | { found: false; message: string; tried: string[] };

function executableName(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'cutune.exe' : 'cutune';
}

/** Why `file` cannot be run, or undefined when it can. */
function unusable(file: string, platform: NodeJS.Platform): string | undefined {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return 'does not exist';
  }
  if (!stat.isFile()) {
    return 'is not a file';
  }
  if (platform !== 'win32') {
    try {
      fs.accessSync(file, fs.constants.X_OK);
    } catch {
      return 'is not executable';
    }
  }
  return undefined;
}

function expandConfigured(configured: string, workspaceFolder: string | undefined): string {
  const expanded = configured === '~' || configured.startsWith('~/') ? os.homedir() + configured.slice(1) : configured;
  if (path.isAbsolute(expanded) || workspaceFolder === undefined) {
    return path.resolve(expanded);
  }
  return path.resolve(workspaceFolder, expanded);
}

/**
 * Finds the server binary: the configured path when set, else the bundled `bin/cutune`, else
 * `cutune` on `PATH`. When none can be run, the message names every path tried.
 */
export function locateServer(lookup: ServerLookup): ServerLocation {
  const name = executableName(lookup.platform);
  if (lookup.configured.trim() !== '') {
    const file = expandConfigured(lookup.configured.trim(), lookup.workspaceFolder);
    const problem = unusable(file, lookup.platform);
    if (problem === undefined) {
      return { found: true, command: file };
    }
    return { found: false, tried: [file], message: `cutune.server.path: ${file} ${problem}.` };
  }

  const bundled = path.join(lookup.extensionPath, 'bin', name);
  const tried = [bundled];
  if (unusable(bundled, lookup.platform) === undefined) {
    return { found: true, command: bundled };
  }
  const delimiter = lookup.platform === 'win32' ? ';' : ':';
  for (const dir of (lookup.searchPath ?? '').split(delimiter)) {
    if (dir === '') {
      continue;
    }
    const candidate = path.join(dir, name);
    tried.push(candidate);
    if (unusable(candidate, lookup.platform) === undefined) {
      return { found: true, command: candidate };
    }
  }
  return {
    found: false,
    tried,
    message: `no ${name} bundled at ${bundled} and none on PATH. Install cutune (cargo install --path server) or set cutune.server.path.`,
  };
}
