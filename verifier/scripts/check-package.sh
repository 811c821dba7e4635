#!/usr/bin/env bash
# The verifier as a resource server's team gets it (docs/revocation-feed.md#installing-the-verifier,
# docs/adr/0032-installing-the-verifier.md): `npm pack` from a clean copy of verifier/ (prepack builds), then in a
# scratch app of its own `npm install <tarball>` (jose from the registry), and
#   - the tarball holds package.json, README.md and dist/src (.js with their .d.ts), nothing else;
#   - the name is one the public registry refuses for a new package, and the package stays private;
#   - the app's lock records the tarball as a file: dependency with its integrity;
#   - CommonJS (require) and ESM (import) load the three entry points, and the Express middleware answers 401;
#   - tsc --noEmit type-checks a file using VerifierOptions and VerifiedAccess under nodenext (.mts and .cts),
#     node10 (Nest's default `module: commonjs`) and bundler resolution.
# Needs only the npm registry (jose). Exits non-zero on the first thing missing.
#   bash scripts/check-package.sh            pack and check
#   bash scripts/check-package.sh <tgz>      check a tarball made elsewhere (a release's)
# With VERIFIER_TARBALL_OUT=<dir>, the tarball that passed is copied there (CI: test-artifacts/verifier/); with
# ALSO_ON_NODE=<node binary>, require and import are checked on that Node too.
set -euo pipefail
CALLER_DIR=$(pwd)
VERIFIER_DIR=$(cd "$(dirname "$0")/.." && pwd)
fail() {
  echo "check-package: $*" >&2
  exit 1
}

if [ ! -x "$VERIFIER_DIR/node_modules/.bin/tsc" ]; then
  (cd "$VERIFIER_DIR" && npm ci --no-audit --no-fund)
fi
TSC="$VERIFIER_DIR/node_modules/.bin/tsc"
NAME=$(node -p "require('$VERIFIER_DIR/package.json').name")
VERSION=$(node -p "require('$VERIFIER_DIR/package.json').version")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gatehouse-verifier-package.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# 1. The tarball. From a copy, so that a dist/ in the working tree (or a test run using it) plays no part.
if [ $# -ge 1 ]; then
  [ -f "$1" ] || fail "no tarball at $1"
  TARBALL=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
else
  mkdir "$WORK/source"
  cp -R "$VERIFIER_DIR/src" "$VERIFIER_DIR"/package.json "$VERIFIER_DIR"/package-lock.json \
    "$VERIFIER_DIR"/tsconfig*.json "$VERIFIER_DIR"/README.md "$WORK/source/"
  ln -s "$VERIFIER_DIR/node_modules" "$WORK/source/node_modules"
  mkdir "$WORK/packed"
  (cd "$WORK/source" && npm pack --silent --pack-destination "$WORK/packed" >/dev/null)
  TARBALL=$(ls "$WORK"/packed/*.tgz)
fi
echo "tarball: $TARBALL"

# 2. What the tarball holds.
tar -tzf "$TARBALL" | sort >"$WORK/contents"
for entry in package.json README.md dist/src/index.js dist/src/index.d.ts dist/src/express.js \
  dist/src/express.d.ts dist/src/nest.js dist/src/nest.d.ts dist/src/http.js dist/src/http.d.ts; do
  grep -qx "package/$entry" "$WORK/contents" || fail "the tarball has no $entry"
done
if grep -vE '^package/(package\.json|README\.md|dist/src/.+\.(js|d\.ts))$' "$WORK/contents"; then
  fail "the tarball holds files it should not (above)"
fi
while read -r entry; do
  grep -qx "${entry%.js}.d.ts" "$WORK/contents" || fail "${entry#package/} has no .d.ts beside it"
done < <(grep '\.js$' "$WORK/contents")
tar -xzOf "$TARBALL" package/package.json >"$WORK/packed-package.json"

# 3. The name and the guard: npm's own name rules (validate-npm-package-name, as bundled with npm) must call the
# name valid for an existing package (so npm installs it) and invalid for a new one (so the registry never creates
# it); the package stays private (npm publish refuses it).
NPM_DIR=$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)
[ -d "$NPM_DIR/node_modules/validate-npm-package-name" ] || NPM_DIR="$(npm root -g)/npm"
[ -d "$NPM_DIR/node_modules/validate-npm-package-name" ] || fail "npm's validate-npm-package-name not found"
node -e '
  const [packageJson, validatePath, expected] = process.argv.slice(1);
  const pkg = require(packageJson);
  const validate = require(validatePath);
  const result = validate(pkg.name);
  const problems = [];
  if (pkg.name !== expected) problems.push(`the tarball is ${pkg.name}, verifier/package.json says ${expected}`);
  if (pkg.private !== true) problems.push("the package is not private: npm publish would send it to a registry");
  if (!result.validForOldPackages) problems.push(`npm cannot install a package named ${pkg.name}: ${result.errors}`);
  if (result.validForNewPackages) problems.push(`${pkg.name} is a name the public registry would let anyone register`);
  if (problems.length) { console.error(problems.join("\n")); process.exit(1); }
  console.log(`name: ${pkg.name} (npm: ${result.warnings.join("; ")}), private`);
' "$WORK/packed-package.json" "$NPM_DIR/node_modules/validate-npm-package-name" "$NAME" ||
  fail "the package name or private flag is wrong"

# 4. A scratch app installs the tarball the documented way.
APP="$WORK/app"
mkdir "$APP"
cp "$TARBALL" "$APP/"
cd "$APP"
printf '{ "name": "scratch-resource-server", "version": "1.0.0", "private": true }\n' >package.json
npm install --no-audit --no-fund --no-update-notifier "./$(basename "$TARBALL")"
node -e '
  const [name, version] = process.argv.slice(1);
  const app = require("./package.json");
  const lock = require("./package-lock.json");
  const installed = lock.packages["node_modules/" + name];
  const jose = lock.packages["node_modules/jose"];
  const problems = [];
  if (!String(app.dependencies?.[name]).startsWith("file:"))
    problems.push(`package.json: ${JSON.stringify(app.dependencies)}`);
  if (!installed?.resolved?.startsWith("file:") || !installed.integrity)
    problems.push(`lock: ${JSON.stringify(installed)}`);
  if (installed?.version !== version) problems.push(`installed ${installed?.version}, expected ${version}`);
  // A registry dependency: an integrity, and a registry URL unless npm is set to omit-lockfile-registry-resolved.
  if (!jose?.integrity || jose.link || (jose.resolved && !jose.resolved.startsWith("http")))
    problems.push(`jose not from a registry: ${JSON.stringify(jose)}`);
  if (problems.length) { console.error(problems.join("\n")); process.exit(1); }
  console.log(`lock: ${name} ${installed.resolved} ${installed.integrity.slice(0, 22)}…; jose ${jose.version}`);
' "$NAME" "$VERSION" || fail "the scratch app's package.json or lock is not as documented"

# 5. Node loads it: require (CommonJS) and import (ESM), through the exports map.
cat >check.cjs <<EOF
const assert = require('node:assert');
const { createVerifier, VerifyError } = require('$NAME');
const { gatehouse } = require('$NAME/express');
const { GatehouseGuard } = require('$NAME/nest');
for (const [name, value] of Object.entries({ createVerifier, VerifyError, gatehouse, GatehouseGuard })) {
  assert.strictEqual(typeof value, 'function', name + ' is ' + typeof value);
}
assert.throws(() => require('$NAME/dist/src/http.js'), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' });
// The middleware, for real: no Authorization header is a 401 before the verifier is asked anything.
const verifier = {
  fresh: true,
  close: async () => {},
  clientAddress: () => undefined,
  verify: () => assert.fail('verify called without a token'),
};
let status;
const res = { status(code) { status = code; return res; }, set() { return res; }, json() { return res; } };
gatehouse(verifier, ['api_keys:read'])({ headers: {} }, res, (error) => assert.fail('next called: ' + error));
setTimeout(() => {
  assert.strictEqual(status, 401);
  console.log('require: createVerifier, VerifyError, gatehouse, GatehouseGuard; the middleware answers 401');
}, 100);
EOF
cat >check.mjs <<EOF
import assert from 'node:assert';
import { createVerifier, VerifyError } from '$NAME';
import { gatehouse } from '$NAME/express';
import { GatehouseGuard } from '$NAME/nest';
for (const [name, value] of Object.entries({ createVerifier, VerifyError, gatehouse, GatehouseGuard })) {
  assert.strictEqual(typeof value, 'function', name + ' is ' + typeof value);
}
console.log('import: createVerifier, VerifyError, gatehouse, GatehouseGuard');
EOF
node check.cjs || fail "CommonJS could not use the package"
node check.mjs || fail "ESM could not use the package"
# The one step whose outcome depends on the Node that runs it, again on another Node (CI: Node 24 beside the machine's
# Node 20; npm and tsc are the same programs on both).
if [ -n "${ALSO_ON_NODE:-}" ]; then
  echo "and on node $("$ALSO_ON_NODE" --version):"
  "$ALSO_ON_NODE" check.cjs || fail "CommonJS could not use the package on $ALSO_ON_NODE"
  "$ALSO_ON_NODE" check.mjs || fail "ESM could not use the package on $ALSO_ON_NODE"
fi

# 6. The types ship: a resource server's TypeScript, checked against the installed .d.ts only (skipLibCheck off).
cat >usage.ts <<EOF
import { createVerifier, VerifyError, type VerifiedAccess, type Verifier, type VerifierOptions } from '$NAME';
import { gatehouse } from '$NAME/express';
import { GatehouseGuard } from '$NAME/nest';

const options: VerifierOptions = {
  issuer: 'https://gatehouse.example.com',
  audience: 'https://orders.example.com',
  clientId: 'client',
  clientSecret: 'secret',
  maxStalenessSeconds: 10,
};
// @ts-expect-error the types are real: an unknown option is an error, not any
const wrong: VerifierOptions = { ...options, maxStaleness: 10 };

export async function organizationOf(token: string): Promise<string | undefined> {
  const verifier: Verifier = await createVerifier(options);
  try {
    const access: VerifiedAccess = await verifier.verify(token, { scopes: ['api_keys:read'] });
    return access.organizationId;
  } catch (error) {
    if (error instanceof VerifyError && error.code === 'revoked') return undefined;
    throw error;
  }
}
export const middleware = (verifier: Verifier) => gatehouse(verifier, ['api_keys:read']);
export const guard = (verifier: Verifier) => new GatehouseGuard(verifier, ['api_keys:read']);
export { wrong };
EOF
cp usage.ts usage.mts
cp usage.ts usage.cts
TYPE_ROOTS="$VERIFIER_DIR/node_modules/@types"
COMMON=(--noEmit --strict --skipLibCheck false --target es2022 --typeRoots "$TYPE_ROOTS" --types node)
"$TSC" "${COMMON[@]}" --module nodenext --moduleResolution nodenext usage.mts usage.cts ||
  fail "tsc (nodenext) could not type-check against the package"
"$TSC" "${COMMON[@]}" --module commonjs --moduleResolution node10 usage.ts ||
  fail "tsc (node10, module commonjs) could not type-check against the package"
"$TSC" "${COMMON[@]}" --module preserve --moduleResolution bundler usage.ts ||
  fail "tsc (bundler) could not type-check against the package"
echo "types: tsc --noEmit under nodenext (ESM and CommonJS), node10 and bundler"

echo "check-package: $NAME@$VERSION installs and works from $(basename "$TARBALL") on node $(node --version)${ALSO_ON_NODE:+ and $("$ALSO_ON_NODE" --version)}"
if [ -n "${VERIFIER_TARBALL_OUT:-}" ]; then
  cd "$CALLER_DIR"
  mkdir -p "$VERIFIER_TARBALL_OUT"
  cp "$TARBALL" "$VERIFIER_TARBALL_OUT/"
  echo "kept: $VERIFIER_TARBALL_OUT/$(basename "$TARBALL")"
fi
