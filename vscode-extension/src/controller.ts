/**
 * Owns the language server's lifetime and what the user sees of it: the palette commands, the
 * language status item, the output channel and the error message when the server cannot start.
 */

import * as vscode from 'vscode';

import {
  COMPARE_COMMAND,
  KERNEL_COMMANDS,
  PROFILE_COMMAND,
  RESTART_COMMAND,
  SHOW_OUTPUT_COMMAND,
  SHOW_PROFILE_COMMAND,
  SHOW_REPORT_COMMAND,
  STOP_COMMAND,
  runKernelCommand,
  runCompare,
  runStop,
  type SendCommand,
  type ServerArgument,
} from './commands';
import { runProfile, runShowProfile } from './profile';
import { runShowReport } from './report';
import { SERVER_ARGUMENTS, locateServer } from './serverPath';
import { SECTION } from './settings';
import { RUNNING_UNREPORTED, STARTING, STATUS_NOTIFICATION, parseStatus, statusView, stoppedView, type StatusView } from './status';

export type ClientState = 'starting' | 'running' | 'stopped';

/** The language client as the controller uses it (vscode-languageclient's, in extension.ts). */
export interface ServerClient {
  start(): Promise<void>;
  /** Stops the server for good: a restart makes a new client. */
  dispose(): Promise<void>;
  sendCommand: SendCommand;
  onNotification(method: string, handler: (params: unknown) => void): void;
  onStateChange(handler: (state: ClientState) => void): void;
}

export interface ServerLaunch {
  command: string;
  args: string[];
  /** The first workspace folder: where the server finds `.cutune/` and `compile_commands.json`. */
  cwd: string | undefined;
  outputChannel: vscode.OutputChannel;
}

export type ClientFactory = (launch: ServerLaunch) => ServerClient;

const SEVERITY: Record<StatusView['severity'], vscode.LanguageStatusSeverity> = {
  information: vscode.LanguageStatusSeverity.Information,
  warning: vscode.LanguageStatusSeverity.Warning,
  error: vscode.LanguageStatusSeverity.Error,
};

export class Controller implements vscode.Disposable {
  private client: ServerClient | undefined;
  /** The binary the running server was started from; `cutune profile` runs it too. */
  private serverCommand: string | undefined;
  private readonly statusItem: vscode.LanguageStatusItem;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionPath: string,
    private readonly createClient: ClientFactory,
    private readonly output: vscode.OutputChannel,
  ) {
    this.statusItem = vscode.languages.createLanguageStatusItem('cutune.status', { language: 'cuda-cpp' });
    this.statusItem.name = 'cutune';
    this.statusItem.command = { title: 'Show output', command: SHOW_OUTPUT_COMMAND };
    this.disposables.push(this.statusItem, ...this.registerCommands());
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((event) => {
        // The other settings reach the running server as didChangeConfiguration.
        if (event.affectsConfiguration(`${SECTION}.server.path`)) {
          void this.restart();
        }
      }),
    );
  }

  private registerCommands(): vscode.Disposable[] {
    const send: SendCommand = (command, argument) => this.sendCommand(command, argument);
    return [
      ...KERNEL_COMMANDS.map((command) => vscode.commands.registerCommand(command.id, () => runKernelCommand(command, send))),
      vscode.commands.registerCommand(STOP_COMMAND.id, () => runStop(send)),
      vscode.commands.registerCommand(COMPARE_COMMAND.id, () => runCompare(send)),
      vscode.commands.registerCommand(SHOW_PROFILE_COMMAND.id, () => runShowProfile(send)),
      vscode.commands.registerCommand(SHOW_REPORT_COMMAND.id, () => runShowReport(send)),
      vscode.commands.registerCommand(PROFILE_COMMAND, () => runProfile(this.serverCommand, send)),
      vscode.commands.registerCommand(RESTART_COMMAND, () => this.restart()),
      vscode.commands.registerCommand(SHOW_OUTPUT_COMMAND, () => this.output.show(true)),
    ];
  }

  private sendCommand(command: string, argument: ServerArgument): Promise<unknown> {
    if (this.client === undefined) {
      return Promise.reject(new Error('the language server is not running (see "cutune: Show output")'));
    }
    return this.client.sendCommand(command, argument);
  }

  /** Starts the server; on failure says why, naming the paths tried. */
  async start(): Promise<void> {
    this.show(STARTING);
    const workspaceFolder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const location = locateServer({
      configured: vscode.workspace.getConfiguration(SECTION).get<string>('server.path') ?? '',
      extensionPath: this.extensionPath,
      workspaceFolder,
      searchPath: process.env.PATH,
      platform: process.platform,
    });
    if (!location.found) {
      this.output.appendLine(`cannot start the language server; tried:\n  ${location.tried.join('\n  ')}`);
      this.failed(`cutune: cannot start the language server: ${location.message}`);
      return;
    }

    this.output.appendLine(`starting ${[location.command, ...SERVER_ARGUMENTS].join(' ')}`);
    const client = this.createClient({ command: location.command, args: [...SERVER_ARGUMENTS], cwd: workspaceFolder, outputChannel: this.output });
    this.client = client;
    this.serverCommand = location.command;
    // Events of a client that has been replaced (restart) are not news.
    const current = () => this.client === client;
    let reported = false;
    client.onNotification(STATUS_NOTIFICATION, (params) => {
      const status = parseStatus(params);
      if (status === undefined) {
        this.output.appendLine(`ignoring a malformed ${STATUS_NOTIFICATION}: ${JSON.stringify(params)}`);
      } else if (current()) {
        reported = true;
        this.show(statusView(status));
      }
    });
    client.onStateChange((state) => {
      if (!current()) {
        return;
      }
      if (state === 'starting') {
        reported = false;
        this.show(STARTING);
      } else if (state === 'running' && !reported) {
        this.show(RUNNING_UNREPORTED);
      } else if (state === 'stopped') {
        this.show(stoppedView('The language server stopped. Run "cutune: Restart language server" to start it again.'));
      }
    });
    try {
      await client.start();
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      if (current()) {
        this.client = undefined;
        await this.release(client);
        this.failed(`cutune: cannot start the language server ${location.command}: ${why}`);
      }
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.serverCommand = undefined;
    if (client !== undefined) {
      await this.release(client);
    }
  }

  private async release(client: ServerClient): Promise<void> {
    try {
      await client.dispose();
    } catch (error) {
      // A client that never got running cannot stop cleanly; it is dropped either way.
      this.output.appendLine(`stopping the language server: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  private show(view: StatusView): void {
    this.statusItem.text = view.text;
    this.statusItem.detail = view.detail;
    this.statusItem.severity = SEVERITY[view.severity];
    this.statusItem.busy = view.busy;
  }

  private failed(message: string): void {
    this.output.appendLine(message);
    this.show(stoppedView(message));
    const openSettings = 'Open Settings';
    const showOutput = 'Show Output';
    void vscode.window.showErrorMessage(message, openSettings, showOutput).then((choice) => {
      if (choice === openSettings) {
        void vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.server.path`);
      } else if (choice === showOutput) {
        this.output.show(true);
      }
    });
  }

  dispose(): void {
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }
}
