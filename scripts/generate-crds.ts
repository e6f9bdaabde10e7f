// Writes the generated CRDs (crds/ and the chart's crds/) and the CEL of the
// chart's admission policy (charts/serverlessapp-operator/files/) from src/api.
// Run with `npm run generate`; the test suite fails if they are stale.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedFiles } from '../src/api/v1alpha1/crd-files.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const [path, text] of generatedFiles()) {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
  console.log(`wrote ${path}`);
}
