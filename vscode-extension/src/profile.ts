/**
 * Profiles in VS Code: "cutune: Profile program" runs `cutune profile -- <cutune.profileCommand>`
 * in a terminal task, and "cutune: Show profile" lists the latest profile's kernels by their share
 * of the program's GPU time (the server's `cutune.showProfile`), opening the one picked.
 */

import * as vscode from 'vscode';

import { SHOW_PROFILE_COMMAND, type SendCommand } from './commands';
import { SECTION } from './settings';

/** What `cutune.showProfile` answers (null: the workspace has no profile yet). */
export interface StoredProfile {
  origin: string;
  profiled_at: number;
  gpu_ns: number;
  kernels: ProfiledKernel[];
}

export interface ProfiledKernel {
  display: string;
  launches: number;
  total_ns: number;
  share: number;
  file: string | null;
  line: number | null;
  kernel: string | null;
}

export interface ProfileItem {
  label: string;
  description: string;
  detail: string;
  /** Where the workspace defines the kernel: a file and a 0-based line. */
  location?: { file: string; line: number };
}

/** `2.50 ms`, `830.0 µs`, as `cutune profile` prints them. */
export function formatNs(ns: number): string {
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(2)} s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  return `${(ns / 1e3).toFixed(1)} µs`;
}

/** One quick-pick item per kernel, in the profile's order (by share). */
export function profileItems(profile: StoredProfile): ProfileItem[] {
  return profile.kernels.map((kernel) => {
    const launches = `${kernel.launches} launch${kernel.launches === 1 ? '' : 'es'}`;
    const item: ProfileItem = {
      label: `${(kernel.share * 100).toFixed(1)}%  ${kernel.display}`,
      description: `${formatNs(kernel.total_ns)} · ${launches}`,
      detail: kernel.file === null ? 'not in the workspace' : `${vscode.workspace.asRelativePath(kernel.file)}:${kernel.line ?? 1}`,
    };
    if (kernel.file !== null) {
      item.location = { file: kernel.file, line: Math.max((kernel.line ?? 1) - 1, 0) };
    }
    return item;
  });
}

/** The workspace whose profile to show: the active editor's file, else the first folder. */
function workspaceUri(): string | undefined {
  return vscode.window.activeTextEditor?.document.uri.toString() ?? vscode.workspace.workspaceFolders?.[0]?.uri.toString();
}

/** Lists the latest profile's kernels; the one picked opens at its definition. */
export async function runShowProfile(send: SendCommand): Promise<void> {
  const uri = workspaceUri();
  if (uri === undefined) {
    void vscode.window.showWarningMessage('cutune: open a folder or a CUDA file to see its profile.');
    return;
  }
  let profile: StoredProfile | null;
  try {
    profile = (await send(SHOW_PROFILE_COMMAND.serverCommand, { uri })) as StoredProfile | null;
  } catch (error) {
    void vscode.window.showErrorMessage(`cutune: cannot read the profile: ${error instanceof Error ? error.message : String(error)}`);
    return;
  }
  if (profile === null || profile.kernels.length === 0) {
    void vscode.window.showWarningMessage('cutune: no profile yet. Run "cutune: Profile program" (setting cutune.profileCommand), or `cutune profile -- <command>` in a terminal.');
    return;
  }
  const items = profileItems(profile);
  const picked = await vscode.window.showQuickPick(items, {
    title: `GPU time of ${profile.origin}: ${formatNs(profile.gpu_ns)}`,
    placeHolder: 'Kernels by share of the GPU time; pick one to open it',
    matchOnDescription: true,
  });
  if (picked?.location !== undefined) {
    const document = await vscode.workspace.openTextDocument(vscode.Uri.file(picked.location.file));
    const at = new vscode.Position(picked.location.line, 0);
    await vscode.window.showTextDocument(document, { selection: new vscode.Selection(at, at) });
  }
}

/** The task's command line: the user's command, run under `cutune profile` at `root`. */
export function profileCommandLine(server: string, root: string, command: string): string {
  return `${shellQuote(server)} profile --root ${shellQuote(root)} -- ${command}`;
}

function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs `cutune.profileCommand` under the profiler in a terminal, where its output shows, and then
 * lists the profile. `server` is the cutune binary the extension runs.
 */
export async function runProfile(server: string | undefined, send: SendCommand): Promise<void> {
  const command = (vscode.workspace.getConfiguration(SECTION).get<string>('profileCommand') ?? '').trim();
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (command === '' || folder === undefined || server === undefined) {
    const why = server === undefined ? 'the language server is not running' : folder === undefined ? 'open a folder first' : 'set cutune.profileCommand to the command that runs your program';
    const openSettings = 'Open Settings';
    const choice = await vscode.window.showWarningMessage(`cutune: cannot profile: ${why} (e.g. "python train.py").`, openSettings);
    if (choice === openSettings) {
      void vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.profileCommand`);
    }
    return;
  }
  const execution = new vscode.ShellExecution(profileCommandLine(server, folder.uri.fsPath, command), { cwd: folder.uri.fsPath });
  const task = new vscode.Task({ type: 'shell' }, folder, 'profile', 'cutune', execution);
  const started = await vscode.tasks.executeTask(task);
  const exitCode = await new Promise<number | undefined>((resolve) => {
    const listener = vscode.tasks.onDidEndTaskProcess((event) => {
      if (event.execution === started) {
        listener.dispose();
        resolve(event.exitCode);
      }
    });
  });
  if (exitCode === 0) {
    await runShowProfile(send);
  } else {
    void vscode.window.showErrorMessage(`cutune: profiling \`${command}\` failed (exit code ${exitCode ?? 'unknown'}); its terminal says why.`);
  }
}
