// Reads the apiserver's audit log (JSON lines, writes only, Metadata level) so
// tests can count the writes a client made, by its user agent.
import { readFileSync } from 'node:fs';

export interface AuditWrite {
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string | undefined;
  namespace: string | undefined;
  name: string | undefined;
  user: string;
  userAgent: string;
  /** HTTP status of the response: a rejected write still appears, with its code. */
  code: number | undefined;
  /** When the API server received the request. */
  /** A dry run (dryRun=All): admission ran, nothing was stored. */
  dryRun: boolean;
  timestamp: Date;
  /** When it answered (the ResponseComplete stage). */
  completed?: Date;
}

/** "verb resource/subresource", e.g. "patch serverlessapps/status". */
export function writeLabel(w: AuditWrite): string {
  return `${w.verb} ${w.resource}${w.subresource ? `/${w.subresource}` : ''}`;
}

export interface AuditFilter {
  userAgentPrefix?: string;
  since?: Date;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** The write requests recorded in `auditLogText`, oldest first, that match `filter`. */
export function parseAuditWrites(auditLogText: string, filter: AuditFilter = {}): AuditWrite[] {
  const writes: AuditWrite[] = [];
  for (const line of auditLogText.split('\n')) {
    if (!line.trim()) continue;
    const write = toWrite(JSON.parse(line) as AuditEvent);
    if (!write) continue;
    if (filter.userAgentPrefix !== undefined && !write.userAgent.startsWith(filter.userAgentPrefix)) continue;
    if (filter.since && write.timestamp < filter.since) continue;
    writes.push(write);
  }
  return writes;
}

export function readAuditWrites(path: string, filter: AuditFilter = {}): AuditWrite[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return parseAuditWrites(text, filter);
}

interface AuditEvent {
  stage?: string;
  verb?: string;
  userAgent?: string;
  user?: { username?: string };
  objectRef?: { apiGroup?: string; resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
  requestURI?: string;
}

function toWrite(event: AuditEvent): AuditWrite | undefined {
  if (event.stage !== 'ResponseComplete' || !event.verb || !WRITE_VERBS.has(event.verb)) return undefined;
  const ref = event.objectRef ?? {};
  return {
    verb: event.verb,
    apiGroup: ref.apiGroup ?? '',
    resource: ref.resource ?? '',
    subresource: ref.subresource,
    namespace: ref.namespace,
    name: ref.name,
    user: event.user?.username ?? '',
    userAgent: event.userAgent ?? '',
    code: event.responseStatus?.code,
    dryRun: /[?&]dryRun=All(&|$)/.test(event.requestURI ?? ''),
    timestamp: new Date(event.requestReceivedTimestamp ?? 0),
    ...(event.stageTimestamp ? { completed: new Date(event.stageTimestamp) } : {}),
  };
}
