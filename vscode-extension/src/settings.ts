/** The `cutune` settings as the server receives them. */

/** The configuration section of every cutune setting. */
export const SECTION = 'cutune';

/**
 * The settings the server reads, as keys of the `cutune` section. `server.path` (how the
 * extension starts the server) and `trace.server` (carried by the protocol's own `trace`) are
 * the client's alone.
 */
export const SERVER_SETTING_KEYS = ['device', 'strategy', 'budget', 'nvrtcPath', 'resultsLocation', 'replay'] as const;

export type ServerSettingKey = (typeof SERVER_SETTING_KEYS)[number];

export type Strategy = 'brute-force' | 'random' | 'annealing' | 'genetic' | 'model';

/** What the server gets as `initializationOptions`, for `workspace/configuration` of section
 *  `cutune`, and in `workspace/didChangeConfiguration`: one shape everywhere. */
export interface ServerSettings {
  device: number;
  strategy: Strategy;
  budget: number;
  nvrtcPath: string;
  resultsLocation: string;
  replay: string;
}

/** The part of `vscode.WorkspaceConfiguration` read here. */
export interface ConfigurationReader {
  get<T>(key: string): T | undefined;
}

/**
 * The server's settings from the `cutune` section. Values are passed on as VS Code holds them
 * (its defaults come from package.json), so the server is the one place that judges them.
 */
export function serverSettings(config: ConfigurationReader): ServerSettings {
  const settings: Record<string, unknown> = {};
  for (const key of SERVER_SETTING_KEYS) {
    settings[key] = config.get(key);
  }
  return settings as unknown as ServerSettings;
}
