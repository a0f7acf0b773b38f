/**
 * This build's version: package.json's version, plus the git commit it was built from as semver build
 * metadata (`0.2.0+fdef2e7`), which scripts/bundle-cli.mjs compiles into the command (esbuild `define`).
 * Unbundled (the library, tests run from src/) it is package.json's version alone.
 */
import { readFileSync } from 'node:fs';

declare const __ETCETERA_BUILD__: string | undefined;

let cached: string | undefined;

export function buildVersion(): string {
  if (typeof __ETCETERA_BUILD__ === 'string') return __ETCETERA_BUILD__;
  return (cached ??= packageVersion());
}

function packageVersion(): string {
  // src/config/ and dist/src/config/ sit at different depths below the package root.
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'etcetera' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not at this depth
    }
  }
  throw new Error('etcetera: package.json not found beside the code: cannot tell this build\'s version');
}
