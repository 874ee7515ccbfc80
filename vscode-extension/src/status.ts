/** The `cutune/status` notification and how the language status item shows it. */

export const STATUS_NOTIFICATION = 'cutune/status';

export type TuningState = 'idle' | 'tuning' | 'verifying' | 'no-device' | 'replay';

const TUNING_STATES: readonly string[] = ['idle', 'tuning', 'verifying', 'no-device', 'replay'];

/** Params of `cutune/status`, sent by the server whenever the device or the tuning state changes. */
export interface ServerStatus {
  device: string | null;
  state: TuningState;
  message: string;
}

export type Severity = 'information' | 'warning' | 'error';

/** What the language status item shows. */
export interface StatusView {
  text: string;
  detail: string;
  severity: Severity;
  /** Shown as a spinner: work under way. */
  busy: boolean;
}

/** The params when they are a well-formed status, else undefined (a server bug to log). */
export function parseStatus(params: unknown): ServerStatus | undefined {
  if (typeof params !== 'object' || params === null) {
    return undefined;
  }
  const { device, state, message } = params as Record<string, unknown>;
  // A server may leave out a null field rather than send it.
  const deviceOk = device === undefined || device === null || typeof device === 'string';
  if (!deviceOk || typeof state !== 'string' || !TUNING_STATES.includes(state) || typeof message !== 'string') {
    return undefined;
  }
  return { device: device ?? null, state: state as TuningState, message };
}

export function statusView(status: ServerStatus): StatusView {
  const device = status.device ?? 'no device';
  switch (status.state) {
    case 'idle':
      return { text: `cutune: ${device} · idle`, detail: status.message, severity: 'information', busy: false };
    case 'tuning': {
      // The message names the kernel and the progress ("rmsnorm_kernel 12/200"); the server may
      // or may not lead with the word itself.
      const what = status.message.replace(/^tuning\s*/, '');
      return { text: `cutune: tuning ${what}`.trimEnd(), detail: device, severity: 'information', busy: true };
    }
    case 'verifying': {
      const what = status.message.replace(/^verifying\s*/, '');
      return { text: `cutune: verifying ${what}`.trimEnd(), detail: device, severity: 'information', busy: true };
    }
    case 'no-device':
      return { text: 'cutune: no CUDA device', detail: status.message, severity: 'warning', busy: false };
    case 'replay': {
      // Labelled in the text itself: replayed timings are not this machine's.
      const text = status.device === null ? 'cutune: replay' : `cutune: replay · ${status.device}`;
      return { text, detail: status.message, severity: 'information', busy: false };
    }
  }
}

/** Before the server's first status. */
export const STARTING: StatusView = {
  text: 'cutune: starting',
  detail: 'starting the language server',
  severity: 'information',
  busy: true,
};

/** Running, but no status yet: still starting as far as the user can tell, without a spinner
 *  in case the server never reports one. */
export const RUNNING_UNREPORTED: StatusView = {
  text: 'cutune: starting',
  detail: 'the language server is running; waiting for its device and tuning state',
  severity: 'information',
  busy: false,
};

/** The server has stopped or could not start; `why` says which. */
export function stoppedView(why: string): StatusView {
  return { text: 'cutune: server not running', detail: why, severity: 'error', busy: false };
}
