/** "cutune: Show tuning report": what goes to the server, and the webview the page opens in. */

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import { runShowReport, showReportOfCodeAction } from '../../src/report';
import type { ServerArgument } from '../../src/commands';
import { editorAt, kernelSymbol } from '../editors';
import { stub, ViewColumn } from '../stub/vscode';

beforeEach(() => stub.reset());

const FILE = '/work/k.cu';
const PAGE = '/work/.cutune/reports/k.scale.html';

function server(answer: () => unknown) {
  const sent: { command: string; argument: ServerArgument }[] = [];
  const send = async (command: string, argument: ServerArgument) => {
    sent.push({ command, argument });
    return answer();
  };
  return { sent, send };
}

const pages = new Map([[PAGE, '<html>page one</html>']]);
const readPage = async (path: string) => {
  const page = pages.get(path);
  if (page === undefined) {
    throw new Error(`ENOENT: no such file, open '${path}'`);
  }
  return page;
};

test('the report of the kernel under the cursor opens in a scripted webview beside the editor, once per page', async () => {
  stub.activeTextEditor = editorAt(FILE, 3, 4);
  stub.builtinCommands.set('vscode.executeDocumentSymbolProvider', () => [kernelSymbol('scale', 2, 10)]);
  const { sent, send } = server(() => ({ kernel: 'scale', path: PAGE, evaluations: 24 }));
  await runShowReport(send, readPage);
  assert.deepEqual(sent, [{ command: 'cutune.showReport', argument: { uri: 'file:///work/k.cu', position: { line: 3, character: 4 } } }]);
  const [panel] = stub.webviewPanels;
  assert.equal(panel.title, 'Tuning report: scale');
  assert.equal(panel.column, ViewColumn.Beside);
  assert.deepEqual(panel.options, { enableScripts: true, localResourceRoots: [] });
  assert.equal(panel.webview.html, '<html>page one</html>');

  // Shown again: the same panel, with the page as it is now.
  pages.set(PAGE, '<html>page two</html>');
  await runShowReport(send, readPage);
  assert.equal(stub.webviewPanels.length, 1);
  assert.equal(panel.webview.html, '<html>page two</html>');
  assert.equal(panel.reveals, 2);
  // Closed, it opens anew.
  panel.dispose();
  await runShowReport(send, readPage);
  assert.equal(stub.webviewPanels.length, 2);
});

test('the server\'s refusal and an unreadable page are said, and nothing opens', async () => {
  stub.activeTextEditor = editorAt(FILE, 3, 4);
  const refused = server(() => {
    throw new Error('/work/k.cu: `scale` has no tuning results in /work/.cutune/results.db: tune it first');
  });
  await runShowReport(refused.send, readPage);
  assert.match(stub.messages[0].text, /^cutune: cannot show the tuning report: .*has no tuning results.*tune it first$/);
  const gone = server(() => ({ kernel: 'scale', path: '/work/gone.html', evaluations: 1 }));
  await runShowReport(gone.send, readPage);
  assert.match(stub.messages[1].text, /cannot show the tuning report: ENOENT/);
  assert.deepEqual(stub.webviewPanels, []);
});

test('outside a CUDA file it says what to open', async () => {
  stub.activeTextEditor = editorAt('/work/setup.py', 0, 0, 'python');
  const { sent, send } = server(() => null);
  await runShowReport(send, readPage);
  assert.deepEqual(sent, []);
  assert.match(stub.messages[0].text, /open a CUDA file .* tuned kernel to see its report/);
});

test('the code action\'s report (open: true) asks the server without it and opens in the webview', async () => {
  const sent: unknown[][] = [];
  const page = '/work/.cutune/reports/k.other.html';
  pages.set(page, '<html>the code action\'s</html>');
  const answer = { kernel: 'scale', path: page, evaluations: 24 };
  const result = await showReportOfCodeAction([{ uri: 'file:///work/k.cu', kernel: 'scale', open: true }], async (args) => {
    sent.push(args);
    return answer;
  }, readPage);
  assert.deepEqual(sent, [[{ uri: 'file:///work/k.cu', kernel: 'scale', open: false }]]);
  assert.deepEqual(result, answer);
  assert.equal(stub.webviewPanels.length, 1);
  assert.equal(stub.webviewPanels[0].title, 'Tuning report: scale');
  assert.equal(stub.webviewPanels[0].webview.html, '<html>the code action\'s</html>');
});
