// istioctl analyze's analyzers over the rig: runs istio-analyze (built by
// test/envtest/build.sh from the istiod module, test/envtest/istio/cmd/istio-analyze),
// which analyzes every namespace of the cluster plus the given YAML files,
// read as if they were written (files win over the cluster, as in istioctl).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { testEnv } from './cluster.ts';

const run = promisify(execFile);

/** One message as `istioctl analyze -o json` prints it. */
export interface AnalysisMessage {
  code: string;
  level: 'Error' | 'Warning' | 'Info';
  message: string;
  /** `<Kind> <namespace>/<name>`. */
  origin?: string;
}

/** The analyzers' messages for the rig, with `objects` added as if written. */
export async function istioAnalyze(objects: object[] = []): Promise<AnalysisMessage[]> {
  const env = testEnv();
  if (!env.dataPlane?.istio) throw new Error('the rig runs no istiod (ENVTEST_ISTIO=off?): no istio-analyze was built');
  const dir = mkdtempSync(join(tmpdir(), 'istio-analyze-'));
  try {
    const files = objects.map((o, i) => {
      const f = join(dir, `${i}.yaml`);
      writeFileSync(f, stringify(o));
      return f;
    });
    const { stdout } = await run(join(env.binDir, 'istio-analyze'), [`--kubeconfig=${env.kubeconfigPath}`, ...files], { maxBuffer: 64 << 20, timeout: 120_000 });
    return JSON.parse(stdout) as AnalysisMessage[] ?? [];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
