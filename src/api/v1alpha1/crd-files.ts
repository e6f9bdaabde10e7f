// The generated files (the CRDs, and the CEL of the chart's admission policy)
// and their contents: used by the generator script and by the test that proves
// the committed files are up to date.
import { stringify } from 'yaml';
import { serverlessAppCRD } from './crd.ts';
import { hostClaimCRD } from './hostclaim.ts';
import { podMetadataPolicy } from './pod-metadata-policy.ts';
import { schedulingPolicy } from './scheduling-policy-cel.ts';

const HEADER = '# Generated from src/api/v1alpha1 by `npm run generate`. Do not edit.\n';

export function generatedFiles(): Array<[path: string, text: string]> {
  const files: Array<[string, object]> = [['serverlessapp.io_serverlessapps.yaml', serverlessAppCRD()], ['serverlessapp.io_hostclaims.yaml', hostClaimCRD()]];
  const yaml = (o: object) => HEADER + stringify(o, { lineWidth: 0, aliasDuplicateObjects: false });
  return [
    ...files.flatMap(([file, crd]) => [[`crds/${file}`, yaml(crd)], [`charts/serverlessapp-operator/crds/${file}`, yaml(crd)]] as Array<[string, string]>),
    // Read by the chart's templates/admission-policy.yaml, which adds the platform's settings.
    ['charts/serverlessapp-operator/files/pod-metadata-policy.yaml', yaml(podMetadataPolicy())],
    ['charts/serverlessapp-operator/files/scheduling-policy.yaml', yaml(schedulingPolicy())],
  ];
}
