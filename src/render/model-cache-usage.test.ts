import assert from 'node:assert/strict';
import { CACHE_USAGE_LABEL, MAX_REPORTED_FOLDERS, modelStorageKey, readUsageReport, renderUsageReport, usageReportName } from './model-cache-usage.ts';

const KEY_A = 'eb47c244c20075ec';
const KEY_B = '0123456789abcdef';

describe('model cache usage reports', () => {
  it('names a model\'s folder as KServe\'s GetStorageKey does: the first 16 hex digits of the URI\'s SHA-256', () => {
    // printf 'gs://models/team-a/iris/v1' | sha256sum | cut -c1-16
    assert.equal(modelStorageKey('gs://models/team-a/iris/v1'), KEY_A);
  });

  it('reads back what the reporter renders: the node and each folder\'s bytes', () => {
    const cm = renderUsageReport('ops', { node: 'node-1', sizes: new Map([[KEY_A, 3 * 2 ** 30], [KEY_B, 0]]) });
    assert.equal(cm.metadata.name, usageReportName('node-1'));
    assert.equal(cm.metadata.namespace, 'ops');
    assert.deepEqual(cm.data, { [KEY_B]: '0', [KEY_A]: '3221225472' });
    assert.deepEqual(readUsageReport(cm), { node: 'node-1', sizes: new Map([[KEY_B, 0], [KEY_A, 3 * 2 ** 30]]) });
  });

  type Report = { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } };
  const refused: Array<{ what: string; change: (cm: Report) => void }> = [
    { what: 'a ConfigMap without the report label', change: (cm) => { cm.metadata.labels = {}; } },
    { what: 'a report under another node\'s name', change: (cm) => { cm.metadata.name = usageReportName('node-2'); } },
    { what: 'a report naming no node', change: (cm) => { cm.metadata.annotations = {}; } },
  ];
  for (const r of refused) {
    it(`reads no report from ${r.what}`, () => {
      const cm: Report & ReturnType<typeof renderUsageReport> = renderUsageReport('ops', { node: 'node-1', sizes: new Map([[KEY_A, 1]]) });
      r.change(cm);
      assert.equal(readUsageReport(cm), undefined);
    });
  }

  const entries: Array<{ what: string; data: Record<string, string>; want: Array<[string, number]> }> = [
    { what: 'keeps storage keys with byte counts', data: { [KEY_A]: '42' }, want: [[KEY_A, 42]] },
    { what: 'skips a name KServe never makes', data: { 'not-a-key': '42', [KEY_A.toUpperCase()]: '1' }, want: [] },
    { what: 'skips a count that is not a whole number of bytes', data: { [KEY_A]: '-1', [KEY_B]: '1.5' }, want: [] },
    { what: 'skips a count with a unit or a leading zero', data: { [KEY_A]: '1Gi', [KEY_B]: '01' }, want: [] },
    { what: 'skips a count past 16 digits', data: { [KEY_A]: '12345678901234567' }, want: [] },
  ];
  for (const e of entries) {
    it(`${e.what}`, () => {
      const cm = { metadata: { name: usageReportName('n'), labels: { [CACHE_USAGE_LABEL]: 'node' }, annotations: { [`${CACHE_USAGE_LABEL}.node`]: 'n' } }, data: e.data };
      assert.deepEqual([...readUsageReport(cm)!.sizes], e.want);
    });
  }

  it('holds the largest folders only, past the bound, whether rendering or reading', () => {
    const many = new Map(Array.from({ length: MAX_REPORTED_FOLDERS + 5 }, (_, i) => [i.toString(16).padStart(16, '0'), i] as [string, number]));
    const cm = renderUsageReport('ops', { node: 'n', sizes: many });
    assert.equal(Object.keys(cm.data).length, MAX_REPORTED_FOLDERS);
    assert.equal(cm.data[(MAX_REPORTED_FOLDERS + 4).toString(16).padStart(16, '0')], String(MAX_REPORTED_FOLDERS + 4));
    assert.equal(cm.data['0000000000000000'], undefined, 'the smallest are left out');
    const read = readUsageReport({ ...cm, data: Object.fromEntries([...many].map(([k, v]) => [k, String(v)])) });
    assert.equal(read!.sizes.size, MAX_REPORTED_FOLDERS);
  });
});
