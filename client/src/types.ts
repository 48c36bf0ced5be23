import type { components, paths } from './openapi';

/** The API's named schemas, as the served OpenAPI document describes them. */
type Schemas = components['schemas'];
export type Key = Schemas['Key'];
export type KeyWithSecret = Schemas['KeyWithSecret'];
export type Credential = Schemas['Credential'];
export type Agent = Schemas['Agent'];
export type Agbom = Schemas['Agbom'];
export type Approval = Schemas['Approval'];
export type Price = Schemas['Price'];
export type PriceList = Schemas['PriceList'];
export type Session = Schemas['Session'];
export type Invocation = Schemas['Invocation'];
export type InvocationStatus = Invocation['status'];
export type AuditEntry = Schemas['AuditEntry'];
export type AuditSignedHead = Schemas['AuditSignedHead'];
export type UsageStats = Schemas['UsageStats'];
export type ErrorBody = Schemas['Error'];

type Method = 'get' | 'post' | 'put' | 'delete' | 'patch';
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** The JSON body an operation takes. */
export type BodyOf<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

/** The query an operation takes (an empty object when it takes none). */
export type QueryOf<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** The JSON a successful (2xx) answer of an operation carries. */
export type ResultOf<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { responses: infer R }
    ? {
        [S in keyof R]: S extends 200 | 201 | 202
          ? R[S] extends { content: { 'application/json': infer J } }
            ? J
            : never
          : never;
      }[keyof R]
    : never;
