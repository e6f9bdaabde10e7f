// Kubernetes' name rules (k8s.io/apimachinery/pkg/util/validation), as regular
// expressions: the CRD's patterns and the operator's flags check names with the
// same ones. Lengths are the callers' (a schema's maxLength), except a key's
// name part, whose 63 characters are part of the rule.

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const SUBDOMAIN = `${LABEL}(\\.${LABEL})*`;
/** The name part of a label or annotation key: up to 63 characters. */
const KEY_NAME = '[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?';

/** A DNS label (RFC 1123): a namespace, a Service, most object names. */
export const DNS_LABEL = `^${LABEL}$`;
/** A DNS subdomain (RFC 1123): a ServiceAccount, a label key's prefix. */
export const DNS_SUBDOMAIN = `^${SUBDOMAIN}$`;
/** A label or annotation key: an optional DNS-subdomain prefix and "/", then a name of up to 63 characters. */
export const QUALIFIED_KEY = `^(${SUBDOMAIN}/)?${KEY_NAME}$`;
/** A key prefix ending in "/*": every key under that prefix. */
export const KEY_PREFIX_WILDCARD = `^${SUBDOMAIN}/\\*$`;
