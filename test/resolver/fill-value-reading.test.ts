/**
 * Values read as people write them (issue 26): the filler's readings beyond the plain ones in
 * fill-args.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { ToolParameter } from '../../src/registry/types.js';
import { fillArguments } from '../../src/resolver/fill-args.js';
import { makeTool } from '../helpers/make-tool.js';

type P = Partial<ToolParameter> & Pick<ToolParameter, 'name'>;
const tool = (...parameters: P[]) =>
  makeTool({ id: 'test_tool', parameters: parameters.map((p) => ({ type: 'string', required: false, ...p }) as ToolParameter) });
const fill = (intent: string, ...parameters: P[]) => fillArguments(intent, tool(...parameters));

describe('names that are not values', () => {
  it('never takes "I\'m", "I\'d" or "API" for a name', () => {
    const state: P = { name: 'state', required: true, description: 'The state of the address' };
    expect(fill("I'm moving soon, check it", state).arguments).toEqual({});
    expect(fill("I'd like the currency API to help", { name: 'base', required: true }).arguments).toEqual({});
  });

  it('reads a capitalised parameter name as the cue for the value beside it, not as a value', () => {
    const r = fill('Pay with my card, expiry date is 12/25, CVV is 123.', { name: 'cvv', required: true });
    expect(r.arguments).toEqual({ cvv: '123' });
  });
});

describe('phone numbers', () => {
  it('reads a phone number that ends the sentence', () => {
    expect(fill('Activate the SIM for my number 123-456-7890.', { name: 'phoneNumber', required: true }).arguments).toEqual({ phoneNumber: '123-456-7890' });
    expect(fill('Call 123-456-7890.5 now', { name: 'phoneNumber', required: true }).arguments).not.toEqual({ phoneNumber: '123-456-7890' });
  });
});

describe('fields that hold secrets', () => {
  const key: P = { name: 'api_key', required: true, description: 'API key for authentication.' };
  const token: P = { name: 'accessToken', required: true };

  it('takes a token named as one on its left, or a quoted one', () => {
    expect(fill('Use my API key x7Fq92kLm to list the rates', key).arguments).toEqual({ api_key: 'x7Fq92kLm' });
    expect(fill('My access token is "abcd1234." Create the role', token).arguments).toEqual({ accessToken: 'abcd1234' });
    expect(fill('Reset it with the password: s3cretPw9', { name: 'password', required: true }).arguments).toEqual({ password: 's3cretPw9' });
  });

  it('never takes a name, a place, an amount or a user name for a secret', () => {
    expect(fill('I am planning a trip to Japan, convert 100 US dollars', key).arguments).toEqual({});
    expect(fill('Update the profile of John Smith', token).arguments).toEqual({});
    const r = fill('Check if the user emma007 with the password letmein is authenticated', { name: 'username', required: true }, { name: 'password', required: true });
    expect(r.arguments.password).toBeUndefined();
    expect(r.missing).toContain('password');
  });

  it('reads which names hold secrets from the head of the name', () => {
    expect(fill('Get the token name Bitcoin', { name: 'token_name', required: true }).arguments).toEqual({ token_name: 'Bitcoin' });
    expect(fill('Open the key k9 settings', { name: 'key', required: true }).arguments).toEqual({ key: 'k9' });
  });
});

describe('amounts of money in text parameters', () => {
  it('sends the amount without its currency, and the currency to its own parameter', () => {
    const r = fill('Transfer 500 USD from account ID 123456', { name: 'fromAccountID', required: true }, { name: 'amount', required: true }, { name: 'currency', required: true });
    expect(r.arguments).toEqual({ fromAccountID: '123456', amount: '500', currency: 'USD' });
    expect(fill('Please process a 111.20 dollars payment for bill ID BILL006', { name: 'billId', required: true }, { name: 'paymentAmount', required: true }).arguments).toEqual({ billId: 'BILL006', paymentAmount: '111.20' });
  });

  it('never takes an amount of money for an identifier', () => {
    const r = fill('Initiate a wire transfer of 5000 USD to an external bank account', { name: 'fromAccountID', required: true }, { name: 'amount', required: true });
    expect(r.arguments).toEqual({ amount: '5000' });
    expect(r.missing).toEqual(['fromAccountID']);
  });
});

describe('currencies written by name', () => {
  const convert = (intent: string) =>
    fill(intent, { name: 'from', required: true, description: 'The base currency.' }, { name: 'to', description: 'The currency to convert to.' }, { name: 'amount', required: true, description: 'The amount to convert.' });

  it('sends the code of a currency written by name, and reads the number before it as the amount', () => {
    expect(convert('How much would 1000 US dollars be in Japanese yen?').arguments).toEqual({ from: 'USD', to: 'JPY', amount: '1000' });
    expect(convert('Convert 500 Euros to British pounds').arguments).toEqual({ from: 'EUR', to: 'GBP', amount: '500' });
  });

  it('never sends a country or another name for a currency', () => {
    const r = convert('I am going to Japan, convert 200 for me');
    expect(r.arguments.from).toBeUndefined();
    expect(r.arguments.to).toBeUndefined();
  });

  it('knows codes and names, and nothing else', async () => {
    const { currencyCode, currencyNameSpans } = await import('../../src/resolver/currency-codes.js');
    expect([currencyCode('Swiss francs'), currencyCode('euro'), currencyCode('USD'), currencyCode('Gold'), currencyCode('Japan'), currencyCode('')]).toEqual(['CHF', 'EUR', 'USD', undefined, undefined, undefined]);
    expect(currencyNameSpans('pay 5 canadian dollars').map((s) => s.code)).toEqual(['CAD']);
    // A long text costs one pass per known name, and no more.
    const long = 'dollar '.repeat(2000);
    const t = performance.now();
    expect(currencyNameSpans(long).length).toBeGreaterThan(100);
    expect(performance.now() - t).toBeLessThan(1000);
  });
});

describe('listed examples', () => {
  it('sends an example met in the text as the schema writes it', () => {
    const feed: P = { name: 'feedType', required: true, description: "The type of data feed to retrieve (e.g., 'csv', 'json', 'xml')." };
    expect(fill('Retrieve the JSON data feed for me', feed).arguments).toEqual({ feedType: 'json' });
  });
});

describe('counts', () => {
  const limit: P = { name: 'limit', type: 'integer', description: 'The maximum number of facts to return' };

  it('reads a count written as a word, and the noun it counts past the words that describe it', () => {
    expect(fill('Tell me three interesting facts about axolotls', limit).arguments).toEqual({ limit: 3 });
    expect(fill('Find me 5 interesting facts about their habitat', limit).arguments).toEqual({ limit: 5 });
  });

  it('does not read "one" as a count, nor cross a preposition to the noun', () => {
    expect(fill('Find me a fact, a cute one', limit).arguments).toEqual({});
    expect(fill('Book 3 rooms for 2 days', { name: 'days', type: 'integer', description: 'Number of days' }).arguments).toEqual({ days: 2 });
    expect(fill('Often ten-fold', { name: 'n', type: 'integer', required: true }).arguments).toEqual({});
    // A count written as a word is no identifier or text.
    expect(fill('scale the checkout deployment to five replicas', { name: 'userId', required: true }).arguments).toEqual({});
    expect(fill('what did I say two messages ago?', { name: 'message_id', type: 'integer', required: true }).arguments).toEqual({});
  });
});

describe('postal addresses', () => {
  const parts: P[] = [
    { name: 'addressLine1', required: true, description: 'The primary address line, including street number and name.' },
    { name: 'addressLine2', description: 'The secondary address line, such as apartment or suite number.' },
    { name: 'city', required: true, description: 'The city of the address.' },
    { name: 'state', required: true, description: 'The state or territory of the address.' },
    { name: 'zipCode', required: true, description: 'The 5-digit ZIP code of the address.' },
  ];

  it('gives each part of an address to the parameter that asks for it', () => {
    expect(fill("I'm not sure of the address. Here it is: 123 Main St, Apt 4B, New York, NY, 10001.", ...parts).arguments).toEqual({
      addressLine1: '123 Main St', addressLine2: 'Apt 4B', city: 'New York', state: 'NY', zipCode: '10001',
    });
    expect(fill('Standardize 456 Elm Street, Suite 789, Los Angeles, CA 90012', ...parts).arguments).toEqual({
      addressLine1: '456 Elm Street', addressLine2: 'Suite 789', city: 'Los Angeles', state: 'CA', zipCode: '90012',
    });
  });

  it('gives the whole address to a parameter that asks for an address and no part of it', () => {
    const r = fill('Ship the parcel to 456 Elm Avenue, Springfield, IL 62704 tomorrow', { name: 'delivery_address', required: true, description: 'The address to deliver to' });
    expect(r.arguments).toEqual({ delivery_address: '456 Elm Avenue, Springfield, IL 62704' });
  });

  it('reads no address from a number and words without a street word, and stays linear on a long input', async () => {
    const { addressMentions } = await import('../../src/resolver/address-parts.js');
    expect(addressMentions('I have 3 Big Red Dogs, Boston, MA')).toEqual([]);
    const long = `${'12 A B C D E '.repeat(700)}St`;
    const t = performance.now();
    addressMentions(long);
    fillArguments(long, tool(...parts));
    expect(performance.now() - t).toBeLessThan(1500);
  });
});

describe('a date with its time', () => {
  it('keeps the time written with a date where the description asks for both, in its format', () => {
    const start: P = { name: 'start', required: true, description: 'When the meeting starts (DD/MM/YYYY HH:MM)' };
    expect(fill('Book the meeting room on 20/06/2022 17:00 please', start).arguments).toEqual({ start: '20/06/2022 17:00' });
    const at: P = { name: 'scheduled_at', required: true, description: 'Date and time, e.g. 2023-05-01T14:00:00' };
    expect(fill('Schedule the post for June 20, 2022 at 5pm', at).arguments).toEqual({ scheduled_at: '2022-06-20T17:00:00' });
  });

  it('sends the date alone where only a date is asked, and the time to a parameter of its own', () => {
    const r = fill('Book a table on 2022-06-20 at 19:30', { name: 'date', required: true, description: 'Date (YYYY-MM-DD)' }, { name: 'time', required: true, description: 'Time of the booking' });
    expect(r.arguments).toEqual({ date: '2022-06-20', time: '19:30' });
  });
});

describe('objects built from their parts', () => {
  const profile: P = { name: 'profileData', type: 'object', required: true, properties: [{ name: 'name', type: 'string', required: false }, { name: 'email', type: 'string', required: false }] };

  it('builds an object from the values the text gives for its fields', () => {
    const r = fill('Update the profile for user USER123. My name is John Doe, my email is john.doe@example.com.', { name: 'userId', required: true }, profile);
    expect(r.arguments).toEqual({ userId: 'USER123', profileData: { name: 'John Doe', email: 'john.doe@example.com' } });
    const quote: P = { name: 'personalDetails', type: 'object', required: true, properties: [{ name: 'familySize', type: 'integer', required: false }, { name: 'ages', type: 'array', required: false }] };
    expect(fill('A quote for a family of four? Our ages are 35, 33, 8 and 5.', quote).arguments).toEqual({ personalDetails: { familySize: 4, ages: ['35', '33', '8', '5'] } });
  });

  it('builds no object from fields the text does not name, or from fewer than half of them', () => {
    expect(fill('Update the profile for user USER123', { name: 'userId', required: true }, profile)).toMatchObject({ arguments: { userId: 'USER123' }, missing: ['profileData'] });
    const car: P = { name: 'carDetails', type: 'object', required: true, properties: [{ name: 'make', type: 'string', required: false }, { name: 'model', type: 'string', required: false }, { name: 'year', type: 'integer', required: false }] };
    expect(fill('A quote for my car, year 2020', car).missing).toEqual(['carDetails']);
  });

  it('puts a phone number, a bare year or a guessed phrase into no field', () => {
    const info: P = { name: 'patientInfo', type: 'object', required: true, properties: [{ name: 'insuranceNumber', type: 'string', required: false }] };
    expect(fill('His phone number 555-123-4567 changed', info).missing).toEqual(['patientInfo']);
    const dates: P = { name: 'updateData', type: 'object', required: true, properties: [{ name: 'endDate', type: 'string', required: false }] };
    expect(fill('Set the end date to 2024', dates).missing).toEqual(['updateData']);
  });

  it('takes an object written as JSON whole', () => {
    expect(fill('Update it with {"name": "Ann"}', profile).arguments).toEqual({ profileData: { name: 'Ann' } });
  });
});

describe('a month written with its year', () => {
  const range: P[] = [{ name: 'accountID', required: true }, { name: 'startDate', required: true }, { name: 'endDate', required: true }];

  it('is the first day at the start of a range and the last at its end', () => {
    expect(fill('Get my statements for account ID 123456 from January 2023 to February 2024', ...range).arguments).toEqual({ accountID: '123456', startDate: '2023-01-01', endDate: '2024-02-29' });
  });

  it('stays as written for a text parameter, and is no single date', () => {
    expect(fill('Get the statement for card ID CC98765 for the period January 2024', { name: 'cardId', required: true }, { name: 'statementPeriod', required: true }).arguments).toEqual({ cardId: 'CC98765', statementPeriod: 'January 2024' });
    expect(fill('Book it in March 2025', { name: 'date', required: true, description: 'Date (YYYY-MM-DD)' }).missing).toEqual(['date']);
    expect(fill('Due May 1, 2024', { name: 'due_date', required: true }).arguments).toEqual({ due_date: '2024-05-01' });
  });
});

describe('an age written as one word', () => {
  it('reads "a 49-year-old" as the age', () => {
    const r = fill('Rheumatology for a 49-year-old individual experiencing joint pain', { name: 'symptoms', required: true }, { name: 'age', type: 'integer' });
    expect(r.arguments.age).toBe(49);
    expect(fill('An 8 year old child', { name: 'age', type: 'integer', required: true }).arguments).toEqual({ age: 8 });
    expect(fill('The 2024-year-old-fashioned item', { name: 'age', type: 'integer' }).arguments).toEqual({});
  });
});

describe('bounded cost', () => {
  it('fills a tool that asks for every new reading from a long adversarial intent in bounded time', () => {
    const params: P[] = [
      { name: 'api_key', required: true },
      { name: 'from', required: true, description: 'The base currency' },
      { name: 'start', required: true, description: 'Start (YYYY-MM-DD HH:MM)' },
      { name: 'city', required: true },
      { name: 'limit', type: 'integer', description: 'Number of facts' },
      { name: 'details', type: 'object', required: true, properties: [{ name: 'name', type: 'string', required: false }, { name: 'ages', type: 'array', required: false }] },
    ];
    for (const unit of ['12 Main St, Apt 4, ', 'three 5 interesting US dollars ', 'January 2024 2024-01-01 17:00 ', '49-year-old 1-1-1-', 'token abc123 "x" ']) {
      const long = unit.repeat(Math.ceil(5000 / unit.length));
      const t = performance.now();
      const r = fillArguments(long, tool(...params));
      expect(r.notes.some((n) => n.includes('intent cut'))).toBe(true);
      expect(performance.now() - t).toBeLessThan(2000);
    }
  });
});
