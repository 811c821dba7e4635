import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

/**
 * The web console (docs/console.md), built by `npm run build` into dist/console beside the server,
 * which serves it at /console. No inline script or style ends up in index.html, so the console's
 * Content-Security-Policy needs no 'unsafe-inline' (src/common/console-assets.ts). Vite compiles
 * TSX itself (oxc, React's automatic JSX runtime); the React plugin would only add Fast Refresh to
 * the dev server (docs/adr/0021-console-react-vite.md).
 */
export default defineConfig({
  root: here,
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
  },
  server: {
    // `npm run console:dev`: the API of a server on :3000 behind the dev server's own origin.
    proxy: { '/v1': 'http://127.0.0.1:3000' },
  },
});
