/**
 * Values read as people state them (issue 40): who fills which role, values named by the noun
 * after them, relative dates, options a description lists, coordinates.
 */
import { describe, expect, it } from 'vitest';
import type { ToolParameter } from '../../src/registry/types.js';
import { relativeDate } from '../../src/resolver/date-values.js';
import { fillArguments } from '../../src/resolver/fill-args.js';
import { makeTool } from '../helpers/make-tool.js';

type P = Partial<ToolParameter> & Pick<ToolParameter, 'name'>;
const tool = (...parameters: P[]) =>
  makeTool({ id: 'test_tool', parameters: parameters.map((p) => ({ type: 'string', required: false, ...p }) as ToolParameter) });
const fill = (intent: string, ...parameters: P[]) => fillArguments(intent, tool(...parameters));

describe('who fills which role', () => {
  const director: P = { name: 'director', required: true, description: 'Director of the movie' };
  const cast: P = { name: 'cast', required: true, description: 'An actor in the movie' };

  it('gives the name after "by" to the maker and the one after "starring" to the cast, whatever their order', () => {
    expect(fill('Find a movie directed by Christopher Nolan starring Michael Caine', director, cast).arguments).toEqual({ director: 'Christopher Nolan', cast: 'Michael Caine' });
    expect(fill('Find a movie starring Michael Caine, directed by Christopher Nolan', director, cast).arguments).toEqual({ director: 'Christopher Nolan', cast: 'Michael Caine' });
    const composer: P = { name: 'composer', required: true };
    const performer: P = { name: 'performer', required: true };
    expect(fill('Find recordings featuring Yo-Yo Ma of the suites by Johann Sebastian Bach', composer, performer).arguments).toEqual({ composer: 'Johann Sebastian Bach', performer: 'Yo-Yo Ma' });
  });

  it('reads the role from the description when the name does not say it', () => {
    const person: P = { name: 'person', required: true, description: 'The author of the book' };
    const r = fill('Tell me about the Pride and Prejudice novel written by Jane Austen', person, { name: 'title', description: 'The title of the book' });
    expect(r.arguments['person']).toBe('Jane Austen');
  });

  it('does not give the maker a name that only follows another word', () => {
    expect(fill('Tell me about Jane Austen', director, cast).arguments).not.toEqual({ director: 'Jane Austen', cast: 'Jane Austen' });
    expect(fill('Pay by card for the movie', director).arguments).toEqual({});
  });
});

describe('options a description enumerates', () => {
  it('reads "one of: a, b", "one of A/B", "either \'a\' or \'b\'" and "possible values include" as the values it takes, spelt as listed', () => {
    expect(fill('Send me the report every week, weekly please', { name: 'frequency', required: true, description: 'How often: one of: daily, weekly, monthly' }).arguments).toEqual({ frequency: 'weekly' });
    expect(fill('I want to pay with a credit card', { name: 'method', required: true, description: 'Payment method, one of Debit Card/Credit Card/Cash' }).arguments).toEqual({ method: 'Credit Card' });
    expect(fill('show it in imperial', { name: 'units', required: true, description: "The units (either 'metric' or 'imperial')." }).arguments).toEqual({ units: 'imperial' });
    expect(fill('watch the memory of the server', { name: 'metric', required: true, description: "The metric. Possible values include: 'CPU', 'Memory', 'Network'" }).arguments).toEqual({ metric: 'Memory' });
  });

  it('reads no options from prose that lists none', () => {
    expect(fill('it is one of a kind', { name: 'kind', description: 'One of a speech, to be given' }).arguments).toEqual({});
    expect(fill('either way works', { name: 'way', description: 'Either way the value is kept' }).arguments).toEqual({});
  });
});

describe('days named from today', () => {
  // Monday, 7 December 2026: the clock is injected, never read.
  const now = new Date(Date.UTC(2026, 11, 7, 15, 0));
  const date: P = { name: 'date', required: true, description: 'The day, as YYYY-MM-DD' };
  const on = (intent: string, ...parameters: P[]) => fillArguments(intent, tool(...parameters), { now }).arguments;

  it('reads "next Friday", "this Monday", "last Tuesday", "in three days", "in 2 weeks", "5 days from now" and "a week ago"', () => {
    expect(relativeDate('next Friday', now)).toEqual({ year: 2026, month: 12, day: 11 });
    expect(relativeDate('next Monday', now)).toEqual({ year: 2026, month: 12, day: 14 });
    expect(relativeDate('this Monday', now)).toEqual({ year: 2026, month: 12, day: 7 });
    expect(relativeDate('last Tuesday', now)).toEqual({ year: 2026, month: 12, day: 1 });
    expect(on('book a table for next Friday', date)).toEqual({ date: '2026-12-11' });
    expect(on('remind me in three days', date)).toEqual({ date: '2026-12-10' });
    expect(on('schedule it in 2 weeks', date)).toEqual({ date: '2026-12-21' });
    expect(on('the meeting 5 days from now', date)).toEqual({ date: '2026-12-12' });
    expect(on('what happened a week ago', date)).toEqual({ date: '2026-11-30' });
    expect(on('what happened on the day before yesterday', date)).toEqual({ date: '2026-12-05' });
  });

  it('keeps "in 3 days" a count of days for a parameter that counts them', () => {
    expect(on('the forecast in 3 days', { name: 'days', type: 'integer', required: true, description: 'How many days' })).toEqual({ days: 3 });
  });

  it('reads no day from words that name none, and no date where the parameter asks for no format', () => {
    expect(relativeDate('next week', now)).toBeUndefined();
    expect(relativeDate('next Fridays', now)).toBeUndefined();
    expect(on('sometime next week, in many days', date)).toEqual({});
    expect(on('see you in a dozen days', date)).toEqual({});
    // A parameter that asks for no date format gets no date made up.
    expect(on('book it for next Friday', { name: 'when', required: true, description: 'When to book' })).toEqual({});
  });
});
