// The loop the rig's small status writers share: list, hand every object to
// `seen`, then watch from the list's resourceVersion and hand it each added or
// changed one; a failed list is tried again a second later and a closed watch
// starts over with a fresh list, until `signal` aborts.
import { Watch, type KubeConfig } from '@kubernetes/client-node';

export interface Listed<T> {
  items: T[];
  metadata?: { resourceVersion?: string };
}

export async function listAndWatch<T>(kc: KubeConfig, path: string, list: () => Promise<Listed<T>>, seen: (obj: T) => void, signal: AbortSignal): Promise<void> {
  const watch = new Watch(kc);
  while (!signal.aborted) {
    const listed = await list().catch(() => undefined);
    if (!listed) {
      await new Promise((r) => setTimeout(r, 1_000));
      continue;
    }
    listed.items.forEach(seen);
    await new Promise<void>((resolve) => {
      void watch.watch(path, { resourceVersion: listed.metadata?.resourceVersion, allowWatchBookmarks: true },
        (type, obj: T) => { if (type === 'ADDED' || type === 'MODIFIED') seen(obj); },
        () => resolve(),
      ).then((req) => {
        if (signal.aborted) req.abort();
        else signal.addEventListener('abort', () => req.abort(), { once: true });
      }, () => resolve());
    });
  }
}
