/** Entry point: wires vscode-languageclient to the controller. */

import * as vscode from 'vscode';
import { ExecuteCommandRequest, LanguageClient, State } from 'vscode-languageclient/node';

import { clientOptions } from './client';
import { Controller, type ClientFactory, type ClientState } from './controller';

const CLIENT_STATE: Record<State, ClientState> = {
  [State.Starting]: 'starting',
  [State.Running]: 'running',
  [State.Stopped]: 'stopped',
};

const createLanguageClient: ClientFactory = (launch) => {
  // The options' middleware sends through the client, built just below.
  let client: LanguageClient | undefined;
  const options = clientOptions(launch.outputChannel, async (method, params) => {
    await client?.sendNotification(method, params);
  });
  // No `transport`: with one, the client would add a `--stdio` flag; stdio is the default anyway.
  const executable = { command: launch.command, args: launch.args, options: { cwd: launch.cwd } };
  const languageClient = new LanguageClient('cutune', 'cutune', { run: executable, debug: executable }, options);
  client = languageClient;
  return {
    start: () => languageClient.start(),
    dispose: () => languageClient.dispose(),
    sendCommand: (command, argument) => languageClient.sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument] }),
    onNotification: (method, handler) => {
      languageClient.onNotification(method, handler);
    },
    onStateChange: (handler) => {
      languageClient.onDidChangeState((event) => handler(CLIENT_STATE[event.newState]));
    },
  };
};

let controller: Controller | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('cutune');
  controller = new Controller(context.extensionPath, createLanguageClient, output);
  context.subscriptions.push(output, controller);
  await controller.start();
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
