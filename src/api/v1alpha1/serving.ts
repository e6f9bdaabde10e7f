// spec.model.serving: which of KServe's kinds serves a model app. A module of its
// own (no schema), so every reader asks one rule without loading the CRD's schema.

export const PREDICTOR = 'predictor';
export const LLM = 'llm';
export const SERVING_MODES = [PREDICTOR, LLM] as const;

/** The app serves a large language model on KServe's LLMInferenceService. */
export function servesLlm(spec: { model?: { serving?: string } | undefined }): boolean {
  return spec.model?.serving === LLM;
}
