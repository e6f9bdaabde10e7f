// Release versions compared by their numbers ("1.21.1", "v24.5.0", "22.19"):
// one rule for the Node.js and Knative versions the operator and its plugin check.

/** Whether `version` is `minimum` or later, part by part; false for what is no release ("devel", ""). */
export function versionAtLeast(version: string, minimum: string): boolean {
  const [have, need] = [version.replace(/^v/, ''), minimum].map((v) => v.split('.').map((p) => Number.parseInt(p, 10)));
  if (!/^\d/.test(version.replace(/^v/, ''))) return false;
  for (let i = 0; i < need!.length; i++) {
    const h = Number.isNaN(have![i]) ? 0 : have![i] ?? 0, n = need![i]!;
    if (h !== n) return h > n;
  }
  return true;
}
