// The oldest Node.js the kubectl plugin runs on. kubectl runs the plugin with
// whatever `node` is first on the PATH (its shebang), and an older one fails
// with a bare SyntaxError, so the entry says what it needs instead. Loaded
// before the plugin, so it loads nothing but the version rule.

import { versionAtLeast } from '../util/version.ts';

/** package.json's `engines.node`, without the `>=` (a unit test keeps them equal). */
export const MINIMUM_NODE = '22.19';

/** Whether `version` ("20.20.2", "v24.1.0") is older than `minimum` ("22.19"). */
export function olderThan(version: string, minimum: string): boolean {
  return !versionAtLeast(version, minimum);
}
