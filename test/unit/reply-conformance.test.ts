import { z } from 'zod';
import type { RouteDef } from '../../api/http/route';
import { conformsToDocs } from '../support/reply-conformance';

const route = {
  method: 'GET',
  path: '/v1/things/{id}',
  responses: {
    200: {
      description: 'a thing',
      schema: z.object({ id: z.string(), output: z.object({ content: z.string() }).nullable() }),
    },
    404: { description: 'not found' },
  },
} as unknown as RouteDef;

describe('the test app holding replies to their documented schemas', () => {
  beforeEach(() => jest.spyOn(console, 'error').mockImplementation(() => undefined));
  afterEach(() => jest.restoreAllMocks());

  it('passes a reply its schema describes exactly', () => {
    expect(() =>
      conformsToDocs(route, { status: 200, body: { id: 't1', output: { content: 'x' } } }),
    ).not.toThrow();
  });

  it('refuses a field the schema does not name, by its path', () => {
    const body = { id: 't1', output: { content: '', tool_calls: [] } };
    expect(() => conformsToDocs(route, { status: 200, body })).toThrow(
      'GET /v1/things/{id} answered 200 off its documented schema: output.tool_calls is not in the schema',
    );
  });

  it('refuses a field of the wrong type, as the client receives it through JSON', () => {
    expect(() => conformsToDocs(route, { status: 200, body: { id: 't1', output: { content: 5 } } })).toThrow(
      /output\.content: Invalid input: expected string/,
    );
    // A Date reaches the client as a string: a schema that says string is right about it.
    const dated = { id: 't1', output: { content: new Date(0) } };
    expect(() => conformsToDocs(route, { status: 200, body: dated })).not.toThrow();
  });

  it('leaves alone statuses without a schema and bodies that are not JSON', () => {
    expect(() => conformsToDocs(route, { status: 404, body: { anything: 1 } })).not.toThrow();
    expect(() => conformsToDocs(route, { status: 200, body: 'event: x\n\n' })).not.toThrow();
  });
});
