/** RFC 3339 with microseconds, the format of metav1.MicroTime (Lease and Event times). */
export function microTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
