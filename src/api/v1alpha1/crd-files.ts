// The generated CRD files and their contents: used by the generator script and
// by the test that proves the committed files are up to date.
import { stringify } from 'yaml';
import { serverlessAppCRD } from './crd.ts';
import { hostClaimCRD } from './hostclaim.ts';

const HEADER = '# Generated from src/api/v1alpha1 by `npm run generate`. Do not edit.\n';

export function crdFiles(): Array<[path: string, text: string]> {
  const files: Array<[string, object]> = [['serverlessapp.io_serverlessapps.yaml', serverlessAppCRD()], ['serverlessapp.io_hostclaims.yaml', hostClaimCRD()]];
  return files.flatMap(([file, crd]) => {
    const text = HEADER + stringify(crd, { lineWidth: 0, aliasDuplicateObjects: false });
    return [[`crds/${file}`, text], [`charts/serverlessapp-operator/crds/${file}`, text]] as Array<[string, string]>;
  });
}
