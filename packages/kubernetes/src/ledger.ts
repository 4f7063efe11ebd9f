/** The issuance ledger lives in the core now, beside the snapshot assembly that reads it; kept here for imports. */
export { IssuanceLedger } from '@eso-mtls/core';
