// Bundles the extension and vscode-languageclient into one CommonJS file, so the .vsix needs no
// node_modules. `vscode` is provided by the editor at run time.
import { build } from 'esbuild';

await build({
  entryPoints: ['src/extension.ts'],
  outfile: 'dist/extension.js',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  external: ['vscode'],
  sourcemap: true,
  minify: process.argv.includes('--minify'),
  logLevel: 'warning',
});
