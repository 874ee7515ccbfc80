/**
 * A session with the real `cutune lsp`, speaking as the extension does: the client capabilities
 * that matter here, the extension's settings, and its answers to the server's requests.
 */

import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import type { ClientCapabilities, ConfigurationParams, InitializeResult } from 'vscode-languageserver-protocol';

import { answerConfiguration } from '../../src/client';
import { SERVER_ARGUMENTS } from '../../src/serverPath';

/** The server binary, from scripts/test. Missing is a broken setup: the tests fail, not skip. */
export function serverBinary(): string {
  const binary = process.env.CUTUNE_BIN;
  if (!binary) {
    throw new Error('CUTUNE_BIN is not set: point it at the cutune binary (scripts/test builds target/debug/cutune).');
  }
  try {
    fs.accessSync(binary, fs.constants.X_OK);
  } catch {
    throw new Error(`CUTUNE_BIN=${binary} is not an executable file. Build it with \`cargo build --bins\`.`);
  }
  return binary;
}

/**
 * What vscode-languageclient 9 offers that the server's behaviour depends on: UTF-16 positions,
 * pulled configuration, resolvable code actions, annotated workspace edits, progress, inlay hints.
 */
export const CLIENT_CAPABILITIES: ClientCapabilities = {
  general: { positionEncodings: ['utf-16'] },
  workspace: {
    applyEdit: true,
    configuration: true,
    didChangeConfiguration: { dynamicRegistration: true },
    executeCommand: { dynamicRegistration: true },
    workspaceEdit: {
      documentChanges: true,
      resourceOperations: ['create', 'rename', 'delete'],
      failureHandling: 'textOnlyTransactional',
      normalizesLineEndings: true,
      changeAnnotationSupport: { groupsOnLabel: true },
    },
    inlayHint: { refreshSupport: true },
  },
  window: { workDoneProgress: true, showMessage: { messageActionItem: { additionalPropertiesSupport: true } } },
  textDocument: {
    synchronization: { dynamicRegistration: true, didSave: true },
    hover: { dynamicRegistration: true, contentFormat: ['markdown', 'plaintext'] },
    documentSymbol: { dynamicRegistration: true, hierarchicalDocumentSymbolSupport: true },
    codeAction: {
      dynamicRegistration: true,
      isPreferredSupport: true,
      disabledSupport: true,
      dataSupport: true,
      resolveSupport: { properties: ['edit'] },
      codeActionLiteralSupport: { codeActionKind: { valueSet: ['', 'quickfix', 'refactor', 'refactor.rewrite', 'source'] } },
      honorsChangeAnnotations: true,
    },
    inlayHint: { dynamicRegistration: true, resolveSupport: { properties: ['tooltip', 'textEdits', 'label.tooltip', 'label.location', 'label.command'] } },
    publishDiagnostics: { relatedInformation: true, versionSupport: false },
  },
};

export interface Message {
  method: string;
  params: unknown;
}

export class Session {
  /** Notifications from the server, in order. */
  readonly notifications: Message[] = [];
  /** Requests from the server, in order, with the answers given. */
  readonly requests: (Message & { answer: unknown })[] = [];

  /** The server's exit code, once it has exited. */
  readonly exited: Promise<number | null>;

  private constructor(
    readonly connection: MessageConnection,
    private readonly child: ChildProcessWithoutNullStreams,
    readonly folder: string,
    readonly stderr: string[],
  ) {
    this.exited = new Promise((resolve) =>
      child.once('exit', (code) => {
        // Pending requests then fail at once instead of waiting for their test's timeout.
        connection.dispose();
        resolve(code);
      }),
    );
  }

  /** Starts `cutune lsp` in a fresh folder (its working directory, like a workspace folder). */
  static start(): Session {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'cutune-protocol-'));
    const child = spawn(serverBinary(), [...SERVER_ARGUMENTS], { cwd: folder });
    const stderr: string[] = [];
    child.stderr.on('data', (data: Buffer) => stderr.push(data.toString()));
    const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    const session = new Session(connection, child, folder, stderr);
    connection.onNotification((method, params) => session.notifications.push({ method, params }));
    connection.onRequest(async (method, params) => {
      const answer = await session.answer(method, params);
      session.requests.push({ method, params, answer });
      return answer;
    });
    connection.listen();
    return session;
  }

  /** The extension's answers: configuration through its middleware (VS Code's own view of
   *  other sections is not under test: null), and what VS Code answers to the rest. */
  private async answer(method: string, params: unknown): Promise<unknown> {
    switch (method) {
      case 'workspace/configuration':
        return answerConfiguration(params as ConfigurationParams, (p) => p.items.map(() => null));
      case 'workspace/applyEdit':
        return { applied: true };
      default:
        // window/workDoneProgress/create, client/registerCapability, ...: null is their success.
        return null;
    }
  }

  async initialize(initializationOptions: unknown): Promise<InitializeResult> {
    const result = await this.connection.sendRequest<InitializeResult>('initialize', {
      processId: process.pid,
      clientInfo: { name: 'Visual Studio Code', version: '1.82.0' },
      rootUri: `file://${this.folder}`,
      workspaceFolders: [{ uri: `file://${this.folder}`, name: path.basename(this.folder) }],
      capabilities: CLIENT_CAPABILITIES,
      initializationOptions,
      trace: 'off',
    });
    await this.connection.sendNotification('initialized', {});
    return result;
  }

  /** Copies a fixture into the session's folder and opens it as VS Code would. */
  async open(fixture: string, languageId = 'cuda-cpp'): Promise<{ uri: string; file: string; text: string }> {
    const text = fs.readFileSync(fixture, 'utf8');
    const file = path.join(this.folder, path.basename(fixture));
    fs.writeFileSync(file, text);
    const uri = `file://${file}`;
    await this.connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId, version: 1, text } });
    return { uri, file, text };
  }

  /** Messages the server showed or logged as errors. */
  errors(): string[] {
    return this.notifications
      .filter((n) => (n.method === 'window/showMessage' || n.method === 'window/logMessage') && (n.params as { type: number }).type === 1)
      .map((n) => (n.params as { message: string }).message);
  }

  /** Ends the session as the client does; resolves to the server's exit code. */
  async end(): Promise<number | null> {
    try {
      await this.connection.sendRequest('shutdown');
      await this.connection.sendNotification('exit');
      return await this.exited;
    } finally {
      if (this.child.exitCode === null && this.child.signalCode === null) {
        this.child.kill();
      }
      fs.rmSync(this.folder, { recursive: true, force: true });
    }
  }
}
