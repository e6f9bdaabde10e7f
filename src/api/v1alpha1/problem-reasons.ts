// Why the operator will not serve a spec as it is, as the Ready condition's
// reason says it. A file of its own, free of validation's dependencies, so
// the kubectl plugin can tell a spec problem from a failed candidate.

/** The Ready reasons of a spec the operator will not serve as it is (planner/status.ts invalidSpecStatus); only a spec change helps. */
export const PROBLEM_REASONS = [
  'InvalidSpec', 'InvalidSchedule', 'GatewayNotAllowed', 'HostNotAllowed',
  'AnalysisProviderNotFound', 'AnalysisAddressNotAllowed', 'ModelSizeNotAllowed', 'StorageUriNotAllowed', 'ServiceAccountNotAllowed',
  'PodMetadataNotAllowed', 'SchedulingNotAllowed', 'SecretReferenceNotAllowed', 'ModelCacheQuotaExceeded', 'ModelCacheLargerThanDeclared', 'HostClaimQuotaExceeded',
  'HostConflict', 'KnativeNotInstalled', 'KServeNotInstalled', 'IstioNotInstalled', 'GatewayAPINotInstalled', 'LLMInferenceServiceNotInstalled', 'RouterUnsupported',
] as const;
export type ProblemReason = (typeof PROBLEM_REASONS)[number];
