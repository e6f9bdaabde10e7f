// Mocha global fixtures: one control plane per test run, with its data plane
// (kube-controller-manager, kube-scheduler, KWOK nodes, the real Knative
// Serving; ENVTEST_DATAPLANE=off for the API server alone), the upstream and
// project CRDs installed and KUBECONFIG pointing at it. Skipped when only unit
// tests (src/) are selected, or when ENVTEST=off.
import { startControlPlane, type ControlPlane } from '../envtest/controlplane.ts';
import { describeFailure } from '../envtest/errors.ts';
import { installAllCrds } from '../envtest/upstream-crds.ts';
import { exitGraceMs } from './exit-grace.ts';
import { setTestEnv } from './cluster.ts';
import { reportLingering } from './lingering.ts';

let controlPlane: ControlPlane | undefined;

export async function mochaGlobalSetup(): Promise<void> {
  if (!needsControlPlane(process.env.ENVTEST, process.argv.slice(2))) return;
  try {
    controlPlane = await startControlPlane({ dataPlane: process.env.ENVTEST_DATAPLANE !== 'off' });
    const started = performance.now();
    const names = await installAllCrds(controlPlane.kubeConfig());
    console.error(`envtest: ${names.length} CRDs installed in ${((performance.now() - started) / 1000).toFixed(1)}s`);
  } catch (err) {
    console.error(describeFailure(err));
    await controlPlane?.stop();
    process.exit(1);
  }
  process.env.KUBECONFIG = controlPlane.kubeconfigPath;
  setTestEnv(controlPlane);
}

/** How long after the last test mocha may take to exit before what keeps it alive is listed: a third of test/run.ts's grace, after which it ends mocha. */
const LINGER_MS = exitGraceMs() / 3;

export async function mochaGlobalTeardown(): Promise<void> {
  setTestEnv(undefined);
  await controlPlane?.stop();
  controlPlane = undefined;
  reportLingering(LINGER_MS, (text) => console.error(text));
}

/** ENVTEST=off|on wins; otherwise a control plane is needed unless every spec named on the command line is under src/. */
export function needsControlPlane(envtest: string | undefined, args: string[]): boolean {
  if (envtest === 'off') return false;
  if (envtest === 'on') return true;
  const specs = args.filter((arg) => !arg.startsWith('-') && (/\.test\.[cm]?[jt]s$/.test(arg) || arg.includes('*')));
  return specs.length === 0 || specs.some((spec) => !spec.replace(/^\.\//, '').startsWith('src/'));
}
