/** `cutune/status` and what the language status item shows for it. */

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseStatus, statusView } from '../../src/status';

test('each tuning state has its text; no device is a warning; tuning is busy', () => {
  const shown = (device: string | null, state: string, message: string) => {
    const status = parseStatus({ device, state, message });
    assert.ok(status, `${state} parses`);
    const view = statusView(status);
    return [view.text, view.detail, view.severity, view.busy];
  };
  assert.deepEqual(shown('H100', 'idle', 'NVIDIA H100 80GB HBM3, sm_90'), ['cutune: H100 · idle', 'NVIDIA H100 80GB HBM3, sm_90', 'information', false]);
  assert.deepEqual(shown('H100', 'tuning', 'rmsnorm_kernel 12/200'), ['cutune: tuning rmsnorm_kernel 12/200', 'H100', 'information', true]);
  assert.deepEqual(shown('H100', 'tuning', 'tuning rmsnorm_kernel 12/200'), ['cutune: tuning rmsnorm_kernel 12/200', 'H100', 'information', true]);
  assert.deepEqual(shown('H100', 'verifying', 'verifying rmsnorm_kernel: running the five stages'), ['cutune: verifying rmsnorm_kernel: running the five stages', 'H100', 'information', true]);
  assert.deepEqual(shown(null, 'no-device', 'cuInit: no CUDA-capable device'), ['cutune: no CUDA device', 'cuInit: no CUDA-capable device', 'warning', false]);
  assert.deepEqual(shown('T4', 'replay', 'replaying gemm.json'), ['cutune: replay · T4', 'replaying gemm.json', 'information', false]);
  assert.deepEqual(shown(null, 'replay', 'replaying gemm.json'), ['cutune: replay', 'replaying gemm.json', 'information', false]);
  assert.deepEqual(shown(null, 'idle', ''), ['cutune: no device · idle', '', 'information', false]);
});

test('a status without its device has none', () => {
  assert.deepEqual(parseStatus({ state: 'no-device', message: 'no driver' }), { device: null, state: 'no-device', message: 'no driver' });
});

test('malformed statuses are refused', () => {
  for (const params of [
    null,
    'idle',
    {},
    { device: 'H100', state: 'busy', message: '' },
    { device: 3, state: 'idle', message: '' },
    { device: 'H100', state: 'idle' },
  ]) {
    assert.equal(parseStatus(params), undefined, JSON.stringify(params));
  }
});
