/** How the language client talks to `cutune lsp`: documents, settings, middleware. */

import * as vscode from 'vscode';
import type { ConfigurationParams, LanguageClientOptions } from 'vscode-languageclient';

import { SHOW_REPORT_COMMAND } from './commands';
import { showReportOfCodeAction } from './report';
import { SECTION, serverSettings, type ServerSettings } from './settings';

/** CUDA sources, in files or unsaved, and the tuning specs beside them. */
export const DOCUMENT_SELECTOR = [
  { scheme: 'file', language: 'cuda-cpp' },
  { scheme: 'untitled', language: 'cuda-cpp' },
  { scheme: 'file', pattern: '**/*.cutune.toml' },
];

export function currentSettings(scope?: vscode.Uri): ServerSettings {
  return serverSettings(vscode.workspace.getConfiguration(SECTION, scope));
}

/**
 * Answers `workspace/configuration`: items of section `cutune` get the same object as
 * `initializationOptions` (not VS Code's nested view, which holds `server.path` and `trace`);
 * every other item gets VS Code's answer from `next`.
 */
export async function answerConfiguration(params: ConfigurationParams, next: (params: ConfigurationParams) => unknown): Promise<unknown> {
  const answers = await next(params);
  if (!Array.isArray(answers)) {
    return answers; // An error: passed on as it is.
  }
  return params.items.map((item, i) =>
    item.section === SECTION ? currentSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined) : answers[i],
  );
}

/** The `workspace/didChangeConfiguration` params: the server's settings under their section. */
export function changedSettings(): { settings: { [SECTION]: ServerSettings } } {
  return { settings: { [SECTION]: currentSettings() } };
}

/**
 * The client's options. `notify` sends a notification through the client, which does not exist
 * yet when its options are built.
 */
export function clientOptions(
  outputChannel: vscode.OutputChannel,
  notify: (method: string, params: unknown) => Promise<void>,
): LanguageClientOptions {
  return {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel,
    // A function, so that each (re)start sends the settings of that moment.
    initializationOptions: () => currentSettings(),
    // Sends didChangeConfiguration when a `cutune.*` setting changes; the middleware below
    // makes its payload the server's settings.
    synchronize: { configurationSection: SECTION },
    middleware: {
      // The code action's report opens in a webview, as the palette command's does, rather
      // than in a browser.
      executeCommand: (command, args, next) => (command === SHOW_REPORT_COMMAND.serverCommand ? showReportOfCodeAction(args, (a) => next(command, a)) : next(command, args)),
      workspace: {
        configuration: (params, token, next) => answerConfiguration(params, (p) => next(p, token)) as Promise<unknown[]>,
        didChangeConfiguration: () => notify('workspace/didChangeConfiguration', changedSettings()),
      },
    },
  };
}
