// The generated CRD files and their contents: used by the generator script and
// by the test that proves the committed files are up to date.
import { stringify } from 'yaml';
import { serverlessAppCRD } from './crd.ts';

const HEADER = '# Generated from src/api/v1alpha1 by `npm run generate`. Do not edit.\n';

export function crdFiles(): Array<[path: string, text: string]> {
  const text = HEADER + stringify(serverlessAppCRD(), { lineWidth: 0, aliasDuplicateObjects: false });
  return [
    ['crds/serverlessapp.io_serverlessapps.yaml', text],
    ['charts/serverlessapp-operator/crds/serverlessapp.io_serverlessapps.yaml', text],
  ];
}
