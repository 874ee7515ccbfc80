/**
 * The part of the `vscode` API the extension uses, in memory. Settings default to package.json's
 * contributions, as in VS Code. Tests drive and inspect it through `stub`.
 */

import manifest from '../../package.json';

export class Disposable {
  constructor(private readonly onDispose: () => void = () => {}) {}
  dispose(): void {
    this.onDispose();
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
  isBefore(other: Position): boolean {
    return this.line < other.line || (this.line === other.line && this.character < other.character);
  }
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
  contains(position: Position): boolean {
    return !position.isBefore(this.start) && !this.end.isBefore(position);
  }
}

export class Selection extends Range {
  constructor(
    readonly anchor: Position,
    readonly active: Position,
  ) {
    super(anchor.isBefore(active) ? anchor : active, anchor.isBefore(active) ? active : anchor);
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  static file(path: string): Uri {
    return new Uri('file', path);
  }
  static parse(value: string): Uri {
    const match = /^([a-z][a-z0-9+.-]*):(?:\/\/[^/]*)?(.*)$/i.exec(value);
    if (match === null) {
      throw new Error(`not a URI: ${value}`);
    }
    return new Uri(match[1], decodeURIComponent(match[2]));
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return this.scheme === 'file' ? `file://${encodeURI(this.path)}` : `${this.scheme}:${encodeURI(this.path)}`;
  }
}

export class DocumentSymbol {
  constructor(
    readonly name: string,
    readonly detail: string,
    readonly kind: number,
    readonly range: Range,
    readonly selectionRange: Range,
  ) {}
}

export enum LanguageStatusSeverity {
  Information = 0,
  Warning = 1,
  Error = 2,
}

export interface TextDocument {
  uri: Uri;
  languageId: string;
}

export interface TextEditor {
  document: TextDocument;
  selection: Selection;
}

export interface LanguageStatusItem {
  id: string;
  selector: unknown;
  name?: string;
  text: string;
  detail?: string;
  severity: LanguageStatusSeverity;
  busy: boolean;
  command?: { title: string; command: string };
  dispose(): void;
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
}

/** A webview panel as the tests see it. */
export interface WebviewPanel {
  viewType: string;
  title: string;
  column: ViewColumn;
  options: object;
  webview: { html: string };
  reveals: number;
  reveal(): void;
  onDidDispose(listener: () => void): Disposable;
  dispose(): void;
}

type Listener<T> = (event: T) => unknown;

class Emitter<T> {
  private listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>): Disposable => {
    this.listeners.push(listener);
    return new Disposable(() => (this.listeners = this.listeners.filter((l) => l !== listener)));
  };
  fire(event: T): void {
    for (const listener of this.listeners) {
      listener(event);
    }
  }
}

interface ConfigurationChange {
  affectsConfiguration(section: string): boolean;
}

/** A contributed setting's default, by its full key (`cutune.budget`). */
function contributedDefault(key: string): unknown {
  const properties = manifest.contributes.configuration.properties as Record<string, { default?: unknown }>;
  return properties[key]?.default;
}

const commandHandlers = new Map<string, (...args: unknown[]) => unknown>();
const configurationChanged = new Emitter<ConfigurationChange>();

/** What the tests set and read. */
export const stub = {
  /** Settings set by the user, by full key; the rest have their contributed defaults. */
  settings: new Map<string, unknown>(),
  workspaceFolders: undefined as { uri: Uri }[] | undefined,
  /** An editor made with test/editors.ts; typed loosely, as those are typed as VS Code's. */
  activeTextEditor: undefined as object | undefined,
  messages: [] as { severity: 'warning' | 'error'; text: string; actions: string[] }[],
  /** The answer of the next `showErrorMessage`. */
  errorChoice: undefined as string | undefined,
  /** The answer of the next `showWarningMessage`. */
  warningChoice: undefined as string | undefined,
  /** What `showQuickPick` picks from the items offered (by label); undefined cancels. */
  quickPick: (items: string[]): string | undefined => items[0],
  quickPicks: [] as string[][],
  /** What `showOpenDialog` chooses (file paths); undefined cancels. */
  openDialog: undefined as string[] | undefined,
  /** The options of each `showOpenDialog`. */
  openDialogs: [] as object[],
  /** Documents shown with `showTextDocument`: path and the selection's start line. */
  shownDocuments: [] as { path: string; line: number | undefined }[],
  statusItems: [] as LanguageStatusItem[],
  webviewPanels: [] as WebviewPanel[],
  output: [] as string[],
  outputShown: 0,
  /** Commands run that are not registered (VS Code's own), with their arguments. */
  executed: [] as { command: string; args: unknown[] }[],
  /** Answers of VS Code's own commands, such as `vscode.executeDocumentSymbolProvider`. */
  builtinCommands: new Map<string, (...args: unknown[]) => unknown>(),
  registered: () => [...commandHandlers.keys()],

  /** Changes settings and tells the listeners, as the settings editor does. */
  changeSettings(changes: Record<string, unknown>): void {
    for (const [key, value] of Object.entries(changes)) {
      stub.settings.set(key, value);
    }
    const keys = Object.keys(changes);
    configurationChanged.fire({
      affectsConfiguration: (section) => keys.some((key) => key === section || key.startsWith(`${section}.`)),
    });
  },

  reset(): void {
    stub.settings.clear();
    stub.workspaceFolders = undefined;
    stub.activeTextEditor = undefined;
    stub.messages = [];
    stub.errorChoice = undefined;
    stub.warningChoice = undefined;
    stub.quickPick = (items) => items[0];
    stub.quickPicks = [];
    stub.openDialog = undefined;
    stub.openDialogs = [];
    stub.shownDocuments = [];
    stub.statusItems = [];
    stub.webviewPanels = [];
    stub.output = [];
    stub.outputShown = 0;
    stub.executed = [];
    stub.builtinCommands.clear();
    commandHandlers.clear();
  },
};

export const window = {
  get activeTextEditor(): TextEditor | undefined {
    return stub.activeTextEditor as TextEditor | undefined;
  },
  showWarningMessage(text: string, ...actions: string[]): Promise<string | undefined> {
    stub.messages.push({ severity: 'warning', text, actions });
    return Promise.resolve(stub.warningChoice);
  },
  showErrorMessage(text: string, ...actions: string[]): Promise<string | undefined> {
    stub.messages.push({ severity: 'error', text, actions });
    return Promise.resolve(stub.errorChoice);
  },
  showQuickPick<T extends string | { label: string }>(items: readonly T[]): Promise<T | undefined> {
    const labels = items.map((item) => (typeof item === 'string' ? item : item.label));
    stub.quickPicks.push(labels);
    const picked = stub.quickPick(labels);
    return Promise.resolve(items.find((_, i) => labels[i] === picked));
  },
  showOpenDialog(options: object): Promise<Uri[] | undefined> {
    stub.openDialogs.push(options);
    return Promise.resolve(stub.openDialog?.map((path) => Uri.file(path)));
  },
  showTextDocument(document: { uri: Uri }, options?: { selection?: Range }): Promise<void> {
    stub.shownDocuments.push({ path: document.uri.path, line: options?.selection?.start.line });
    return Promise.resolve();
  },
  createWebviewPanel(viewType: string, title: string, column: ViewColumn, options: object): WebviewPanel {
    const disposed = new Emitter<void>();
    const panel: WebviewPanel = {
      viewType,
      title,
      column,
      options,
      webview: { html: '' },
      reveals: 0,
      reveal: () => panel.reveals++,
      onDidDispose: (listener) => disposed.event(listener),
      dispose: () => disposed.fire(),
    };
    stub.webviewPanels.push(panel);
    return panel;
  },
  createOutputChannel(name: string) {
    return {
      name,
      appendLine: (line: string) => stub.output.push(line),
      show: () => stub.outputShown++,
      dispose: () => {},
    };
  },
};

export const workspace = {
  get workspaceFolders() {
    return stub.workspaceFolders;
  },
  getConfiguration(section: string, _scope?: Uri) {
    return {
      get<T>(key: string): T | undefined {
        const full = `${section}.${key}`;
        return (stub.settings.has(full) ? stub.settings.get(full) : contributedDefault(full)) as T | undefined;
      },
    };
  },
  onDidChangeConfiguration: configurationChanged.event,
  asRelativePath(path: string): string {
    const folder = stub.workspaceFolders?.[0]?.uri.path;
    return folder !== undefined && path.startsWith(`${folder}/`) ? path.slice(folder.length + 1) : path;
  },
  openTextDocument(uri: Uri): Promise<{ uri: Uri }> {
    return Promise.resolve({ uri });
  },
};

export const languages = {
  createLanguageStatusItem(id: string, selector: unknown): LanguageStatusItem {
    const item: LanguageStatusItem = {
      id,
      selector,
      text: '',
      severity: LanguageStatusSeverity.Information,
      busy: false,
      dispose: () => {},
    };
    stub.statusItems.push(item);
    return item;
  },
};

export const commands = {
  registerCommand(id: string, handler: (...args: unknown[]) => unknown): Disposable {
    if (commandHandlers.has(id)) {
      throw new Error(`command '${id}' already exists`);
    }
    commandHandlers.set(id, handler);
    return new Disposable(() => commandHandlers.delete(id));
  },
  async executeCommand<T>(id: string, ...args: unknown[]): Promise<T> {
    const handler = commandHandlers.get(id);
    if (handler !== undefined) {
      return (await handler(...args)) as T;
    }
    stub.executed.push({ command: id, args });
    return (await stub.builtinCommands.get(id)?.(...args)) as T;
  },
};
