import { perList } from './per-list';

/** A dated snapshot's suffix: -2024-07-18 (OpenAI) or -20241022 (Anthropic). */
const DATED = /-(?:\d{4}-\d{2}-\d{2}|\d{8})$/;
/** A moving alias's suffix: -latest, or Anthropic's -0 for a model whose snapshot has no minor. */
const MOVING = /-(?:latest|0)$/;

/** The model a name stands for: gpt-4o-mini for gpt-4o-mini-2024-07-18, claude-opus-4 for claude-opus-4-0. */
const familyOf = (model: string): string => model.replace(DATED, '').replace(MOVING, '');

/**
 * A policy's model list as a matcher. A listed alias (a name without a date) also covers its
 * dated snapshots, which the providers serve under the same model: denying gpt-4o-mini denies
 * gpt-4o-mini-2024-07-18, and claude-3-5-haiku-latest covers claude-3-5-haiku-20241022. A listed
 * snapshot covers only itself. Used where a match makes a rule stricter (deny_models, applies_to,
 * require_approval.when); allow lists stay exact, so an allowed alias allows no snapshot unlisted.
 */
export interface ModelList {
  has(model: string): boolean;
}

export const modelListOf = perList((list): ModelList => {
  const exact = new Set(list);
  const families = new Set(list.filter((m) => !DATED.test(m)).map(familyOf));
  return { has: (model) => exact.has(model) || families.has(familyOf(model)) };
});
