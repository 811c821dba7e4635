// Nest 12 packages are ESM-only. Node 20.19 loads them from our CommonJS build through
// require(esm), but Jest's module runtime only does that on Node 24.9+, so under Jest we let
// SWC compile those packages to CommonJS (cached after the first run).
const esmPackages = [
  '@nestjs',
  'file-type',
  'strtok3',
  'token-types',
  '@tokenizer',
  '@borewit',
  'uint8array-extras',
  'uid',
  // The independent OAuth/JOSE clients the interop tests use.
  'jose',
  'oauth4webapi',
  'openid-client',
];
module.exports = {
  testEnvironment: 'node',
  rootDir: '.',
  testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
  transform: { '^.+\\.(t|j)s$': ['@swc/jest'] },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  // Compiles the project once per run: worker threads load compiled JavaScript, as in production.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
};
