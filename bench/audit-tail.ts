// The API server's audit log read as it grows: each poll parses only the
// lines written since the last one, so the peer comparison can follow a
// controller's writes every half second without re-reading a log that holds
// every write of the run (tens of megabytes at 1,000 objects a side).
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { parseAuditWrites, type AuditWrite } from '../test/envtest/audit.ts';

export class AuditTail {
  private readonly fd: number;
  private offset: number;
  private partial = '';
  private readonly seen: AuditWrite[] = [];

  /** Starts at the log's current end: earlier writes are not this tail's. */
  constructor(path: string) {
    this.fd = openSync(path, 'r');
    this.offset = fstatSync(this.fd).size;
  }

  /** Every write logged since the tail was opened, oldest first. */
  writes(): AuditWrite[] {
    const size = fstatSync(this.fd).size;
    if (size > this.offset) {
      const buf = Buffer.alloc(size - this.offset);
      const n = readSync(this.fd, buf, 0, buf.length, this.offset);
      this.offset += n;
      const text = this.partial + buf.subarray(0, n).toString('utf8');
      const end = text.lastIndexOf('\n') + 1;
      this.partial = text.slice(end);
      this.seen.push(...parseAuditWrites(text.slice(0, end)));
    }
    return this.seen;
  }

  close(): void {
    closeSync(this.fd);
  }
}
