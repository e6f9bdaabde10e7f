import { startControlPlane } from './controlplane.ts';
import { installAllCrds } from './upstream-crds.ts';
const cp = await startControlPlane();
try {
  const t = performance.now();
  const names = await installAllCrds(cp.kubeConfig());
  console.log(names.length, names.join(' '), (performance.now() - t) / 1000);
  const t2 = performance.now();
  await cp.restartApiServer();
  console.log('restart with CRDs', (performance.now() - t2) / 1000);
} catch (e) { console.error(e); }
finally { await cp.stop(); }
