/**
 * "cutune: Show tuning report": the server writes the kernel's report page beside its results
 * and answers the page's path; the page opens in a webview beside the editor. The page is
 * self-contained (its charting library inside), so the webview loads nothing else.
 */

import { promises as fs } from 'node:fs';
import * as vscode from 'vscode';

import { activeKernelArgument, SHOW_REPORT_COMMAND, type SendCommand } from './commands';

/** The server's answer to `cutune.showReport`. */
export interface WrittenReport {
  kernel: string;
  path: string;
  evaluations: number;
}

/** One panel per page: showing a report again refreshes its panel. */
const panels = new Map<string, vscode.WebviewPanel>();

export type ReadPage = (path: string) => Promise<string>;

export async function runShowReport(send: SendCommand, readPage: ReadPage = (path) => fs.readFile(path, 'utf8')): Promise<void> {
  const argument = await activeKernelArgument('a tuned kernel to see its report', 'Kernel to show the report of');
  if (argument === undefined) {
    return;
  }
  let written: WrittenReport;
  let html: string;
  try {
    written = (await send(SHOW_REPORT_COMMAND.serverCommand, argument)) as WrittenReport;
    html = await readPage(written.path);
  } catch (error) {
    void vscode.window.showErrorMessage(`cutune: cannot show the tuning report: ${error instanceof Error ? error.message : String(error)}`);
    return;
  }
  showPage(written, html);
}

/**
 * The code action's `cutune.showReport`, whose `open: true` asks the server to have the page
 * opened in a browser: sent without it, and the page shown in the webview instead.
 */
export async function showReportOfCodeAction(args: unknown[], send: (args: unknown[]) => Promise<unknown>, readPage: ReadPage = (path) => fs.readFile(path, 'utf8')): Promise<unknown> {
  const [argument, ...rest] = args;
  const written = (await send([{ ...(argument as object), open: false }, ...rest])) as WrittenReport;
  showPage(written, await readPage(written.path));
  return written;
}

function showPage(written: WrittenReport, html: string): void {
  let panel = panels.get(written.path);
  if (panel === undefined) {
    // The page's scripts draw its charts; it reads no local files.
    panel = vscode.window.createWebviewPanel('cutune.report', `Tuning report: ${written.kernel}`, vscode.ViewColumn.Beside, { enableScripts: true, localResourceRoots: [] });
    const opened = panel;
    panels.set(written.path, opened);
    opened.onDidDispose(() => panels.delete(written.path));
  }
  panel.webview.html = html;
  panel.reveal();
}
