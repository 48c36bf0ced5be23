export { createControlPlane, type ControlPlane } from './control-plane';
export { ControlPlaneError } from './errors';
export { FINAL_STATUSES, isFinal, type InvokeBody, type InvokeOptions, type WaitOptions } from './invoke';
export { collect, type ListItem, type ListPath, type ListQuery } from './pagination';
export { DEFAULT_BASE_URL, IDEMPOTENT_POSTS, type ControlPlaneOptions, type RawClient } from './transport';
export type * from './types';
export type { components, paths, operations } from './openapi';
