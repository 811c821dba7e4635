// TypeORM CLI entry (docs/architecture.md). The definition lives in src/database so that the build
// compiles it: `npm run typeorm -- migration:show` uses dist/database/data-source.js.
export { default } from './src/database/data-source';
