import { describe, expect, it } from 'vitest';
import { parseToolManifest } from '../../src/registry/tool-manifest.js';
import type { ToolParameter } from '../../src/registry/types.js';
import { MAX_INTENT_CHARS, fillArguments } from '../../src/resolver/fill-args.js';
import { makeTool } from '../helpers/make-tool.js';

type P = Partial<ToolParameter> & Pick<ToolParameter, 'name'>;
const tool = (...parameters: P[]) =>
  makeTool({ id: 'test_tool', parameters: parameters.map((p) => ({ type: 'string', required: false, ...p }) as ToolParameter) });
const fill = (intent: string, ...parameters: P[]) => fillArguments(intent, tool(...parameters));

describe('explicit hints', () => {
  it('reads key=value and key: value for known parameter names', () => {
    const r = fill('weather city=Paris units: imperial', { name: 'city', required: true }, { name: 'units', enum: ['metric', 'imperial'] });
    expect(r.arguments).toEqual({ city: 'Paris', units: 'imperial' });
    expect(r.confidence).toBe(1);
  });

  it('reads a quoted hint value with spaces, and `key: value` up to the comma', () => {
    const r = fill('note title="Hello World", body: buy milk and eggs, tags=x', { name: 'title', required: true }, { name: 'body' });
    expect(r.arguments).toEqual({ title: 'Hello World', body: 'buy milk and eggs' });
  });

  it('lets the exact parameter name win over a look-alike, and matches names case-insensitively', () => {
    const r = fill('lookup name=Bob full_name=Robert Smith', { name: 'name' }, { name: 'full_name' });
    expect(r.arguments).toEqual({ name: 'Bob', full_name: 'Robert' });
    expect(fill('go City=Rome', { name: 'city', required: true }).arguments).toEqual({ city: 'Rome' });
  });

  it('does not read a hint inside quoted text', () => {
    const r = fill('Post "note: buy milk" now', { name: 'message', required: true }, { name: 'note' });
    expect(r.arguments).toEqual({ message: 'note: buy milk' });
  });

  it('coerces hint values to the parameter type and reports the ones that do not fit', () => {
    const r = fill('run count=3 verbose=yes ratio=0.5 ids=[1,2] limit=lots', { name: 'count', type: 'integer' }, { name: 'verbose', type: 'boolean' }, { name: 'ratio', type: 'number' }, { name: 'ids', type: 'array', items: { type: 'integer' } }, { name: 'limit', type: 'integer' });
    expect(r.arguments).toEqual({ count: 3, verbose: true, ratio: 0.5, ids: [1, 2] });
    expect(r.notes.some((n) => n.includes('limit') && n.includes('ignored'))).toBe(true);
  });
});

describe('quoted strings', () => {
  it('takes double, curly and single quotes', () => {
    expect(fill('Send the message "hello there"', { name: 'message', required: true }).arguments).toEqual({ message: 'hello there' });
    expect(fill('Send the message “hi you”', { name: 'message', required: true }).arguments).toEqual({ message: 'hi you' });
    expect(fill("Play the song 'Let It Be' now", { name: 'song', required: true }).arguments).toEqual({ song: 'Let It Be' });
  });

  it('does not read apostrophes as quotes', () => {
    const r = fill("Summarise Acme Inc.'s report on the company's growth", { name: 'company', required: true });
    expect(r.arguments).toEqual({ company: 'Acme Inc.' });
  });

  it('reads an unclosed quote to the end, dropping the full stop after an identifier but not after a sentence', () => {
    expect(fill('Start the workspace with ID "ab12Cd.', { name: 'workspace_id', required: true }).arguments).toEqual({ workspace_id: 'ab12Cd' });
    expect(fill('Post the text "the cat sat on the mat.', { name: 'text', required: true }).arguments).toEqual({ text: 'the cat sat on the mat.' });
  });

  it('drops the full stop English puts inside the quotes after a one-token value, and keeps a quoted sentence whole', () => {
    expect(fill('I have an access token "abcd1234." Could you list the roles?', { name: 'accessToken', required: true }).arguments).toEqual({ accessToken: 'abcd1234' });
    expect(fill("my user ID is 'g-user123,' please", { name: 'userId', required: true }).arguments).toEqual({ userId: 'g-user123' });
    expect(fill('In the comment, add "Sending multiple spam emails."', { name: 'comment', required: true }).arguments).toEqual({ comment: 'Sending multiple spam emails.' });
  });

  it('assigns several quoted values by the parameter words before each', () => {
    const r = fill('Pair device "dev-1" with actuator "act-9"', { name: 'device_id', required: true }, { name: 'actuator_id', required: true });
    expect(r.arguments).toEqual({ device_id: 'dev-1', actuator_id: 'act-9' });
  });
});

describe('numbers and units', () => {
  it('matches numbers to parameters by unit and by the words before them', () => {
    const r = fill(
      'Ship a parcel of 3.5kg over 5 km',
      { name: 'weight', type: 'number', description: 'Weight in kilograms', required: true },
      { name: 'distance', type: 'number', description: 'Distance in kilometers', required: true },
    );
    expect(r.arguments).toEqual({ weight: 3.5, distance: 5 });
  });

  it('reads percentages, money with thousands separators and negative numbers', () => {
    const r = fill('Apply a discount of 20% to a price of $1,200 at a temperature of -4.5', { name: 'discount', type: 'number', required: true }, { name: 'price', type: 'number', required: true }, { name: 'temperature', type: 'number' });
    expect(r.arguments).toEqual({ discount: 20, price: 1200, temperature: -4.5 });
  });

  it('converts between units of one dimension when the description names another unit', () => {
    const r = fill('Set a timer for 10 minutes', { name: 'duration', type: 'integer', required: true, description: 'Duration in seconds' });
    expect(r.arguments).toEqual({ duration: 600 });
    expect(fill('Walk 2.5 km', { name: 'distance', type: 'number', required: true, description: 'Distance in meters' }).arguments).toEqual({ distance: 2500 });
  });

  it('keeps a currency code after an amount as a value of its own', () => {
    const r = fill('Convert 100 USD to EUR', { name: 'amount', type: 'number', required: true }, { name: 'from_currency', required: true }, { name: 'to_currency', required: true });
    expect(r.arguments).toEqual({ amount: 100, from_currency: 'USD', to_currency: 'EUR' });
  });

  it('turns a percentage into a fraction only for a parameter described as one', () => {
    expect(fill('Split with a test size of 20%', { name: 'test_size', type: 'number', required: true, description: 'Share of rows for testing (e.g., 0.2 for 20%)' }).arguments).toEqual({ test_size: 0.2 });
    expect(fill('Milk with a fat content of 13.1%', { name: 'fat_content', type: 'number', required: true, description: 'Fat content in percent (e.g., 3.5)' }).arguments).toEqual({ fat_content: 13.1 });
  });

  it('does not put a fraction into an integer parameter', () => {
    const r = fill('Use 3.5 workers', { name: 'workers', type: 'integer', required: true });
    expect(r.arguments).toEqual({});
    expect(r.missing).toEqual(['workers']);
  });

  it('keeps numbers of the same kind in schema order when nothing else tells them apart', () => {
    const r = fill('Resize the image to 800 by 600', { name: 'width', type: 'integer', required: true }, { name: 'height', type: 'integer', required: true });
    expect(r.arguments).toEqual({ width: 800, height: 600 });
  });

  it('gives an identifier to an integer id and keeps it as text for a string id', () => {
    expect(fill('Delete the book with ID 81', { name: 'book_id', type: 'integer', required: true }).arguments).toEqual({ book_id: 81 });
    expect(fill('Delete the book with ID 81', { name: 'book_id', required: true }).arguments).toEqual({ book_id: '81' });
  });

  it('reads a year into a year parameter', () => {
    expect(fill('Show the budget for the year 2023', { name: 'year', type: 'integer', required: true }).arguments).toEqual({ year: 2023 });
  });
  describe('a number followed by the noun a parameter counts', () => {
    const city = { name: 'city', required: true, description: 'City name' } as const;
    const days = { name: 'days', type: 'integer', description: 'How many days' } as const;

    it('fills an optional parameter named by the noun, in its singular or plural', () => {
      for (const intent of ['get the weather forecast for "Paris" for 3 days', 'weather in Paris for the next 3 days', 'forecast for Paris, 3 days']) {
        expect(fill(intent, city, days).arguments, intent).toEqual({ city: 'Paris', days: 3 });
      }
      expect(fill('a forecast for 1 day in Rome', city, days).arguments).toEqual({ city: 'Rome', days: 1 });
      expect(fill('repay over 5 years', { name: 'years', type: 'integer', description: 'Loan term' }).arguments).toEqual({ years: 5 });
    });

    it('fills an optional parameter whose description counts or measures in the noun', () => {
      expect(fill('show the last 5 commits', { name: 'count', type: 'integer', description: 'How many commits' }).arguments).toEqual({ count: 5 });
      expect(fill('resize to 800 pixels wide', { name: 'width', type: 'integer', description: 'Width in pixels' }).arguments).toEqual({ width: 800 });
      expect(fill('cut it to 280 characters', { name: 'limit', type: 'integer', description: 'Maximum length in characters' }).arguments).toEqual({ limit: 280 });
    });

    it('gives each number to the parameter that counts its noun', () => {
      const rooms = { name: 'rooms', type: 'integer', description: 'Number of rooms' } as const;
      expect(fill('book 2 days and 3 rooms', rooms, days).arguments).toEqual({ rooms: 3, days: 2 });
      expect(fill('book 3 rooms for 2 days', rooms, days).arguments).toEqual({ rooms: 3, days: 2 });
    });

    it('does not fill an optional parameter from a number that counts something else', () => {
      expect(fill('book 3 rooms in Paris', city, days).arguments).toEqual({ city: 'Paris' });
      expect(fill('book 3 rooms', days).arguments).toEqual({});
      expect(fill('show 5 branches', { name: 'count', type: 'integer', description: 'How many commits' }).arguments).toEqual({});
    });
  });
});

describe('booleans', () => {
  const flag: P = { name: 'include_images', type: 'boolean' };
  it('reads negation and affirmation around the concept word', () => {
    expect(fill('search cats without images', { name: 'query' }, flag).arguments['include_images']).toBe(false);
    expect(fill('search cats with images', { name: 'query' }, flag).arguments['include_images']).toBe(true);
    expect(fill('search cats, images: no', flag).arguments['include_images']).toBe(false);
  });

  it('leaves an optional boolean out when the concept is not mentioned', () => {
    expect(fill('search cats', flag).arguments).toEqual({});
  });
});

describe('dates', () => {
  const range: P[] = [{ name: 'start_date', required: true }, { name: 'end_date', required: true }];
  it('normalises written dates to ISO and keeps from/to order', () => {
    expect(fill('Report from May 1, 2024 to 2024-05-03', ...range).arguments).toEqual({ start_date: '2024-05-01', end_date: '2024-05-03' });
    expect(fill('Report from 3 June 2023 until 07/04/2023', ...range).arguments).toEqual({ start_date: '2023-06-03', end_date: '2023-07-04' });
  });

  it('uses the format the description asks for', () => {
    const r = fill('Book for March 2, 2025', { name: 'date', required: true, description: 'Date of the booking (DD/MM/YYYY)' });
    expect(r.arguments).toEqual({ date: '02/03/2025' });
  });

  it('keeps a relative date as text unless the description asks for a format', () => {
    expect(fill('Remind me tomorrow', { name: 'date', required: true }).arguments).toEqual({ date: 'tomorrow' });
    const r = fillArguments('Remind me tomorrow', tool({ name: 'date', required: true, description: 'Date (YYYY-MM-DD)' }), { now: new Date('2024-02-28T12:00:00Z') });
    expect(r.arguments).toEqual({ date: '2024-02-29' });
  });

  it('rejects impossible calendar days', () => {
    const date: P = { name: 'date', required: true, description: 'Day of the report (YYYY-MM-DD)' };
    expect(fill('Report on 2023-02-30', date).missing).toEqual(['date']);
    expect(fill('Report on February 30, 2023', date).missing).toEqual(['date']);
  });
});

describe('paths, URLs, e-mails', () => {
  it('puts each kind where the schema names it', () => {
    const r = fill(
      'Upload ./data/report.csv to https://example.com/upload?x=1, then mail ann@example.org.',
      { name: 'file_path', required: true },
      { name: 'url', required: true },
      { name: 'email', required: true },
    );
    expect(r.arguments).toEqual({ file_path: './data/report.csv', url: 'https://example.com/upload?x=1', email: 'ann@example.org' });
  });
});

describe('a quoted value named by the noun before it', () => {
  const listDirectory = { name: 'path', format: 'path', default: '.', description: 'Directory, relative to the project root' } as const;

  it('fills an optional path from "the directory/folder/file \"x\"", where the quotes alone are too little evidence', () => {
    expect(fill('list the entries of the directory "src"', listDirectory).arguments).toEqual({ path: 'src' });
    expect(fill("what is in the folder 'docs'", listDirectory).arguments).toEqual({ path: 'docs' });
    expect(fill('show the file “notes”', { name: 'target', format: 'path' }).arguments).toEqual({ target: 'notes' });
  });

  it('needs the noun right before the quote, and the parameter to hold a path', () => {
    // The quoted text is a title here, not the directory.
    expect(fill('list the directory entries titled "src"', listDirectory).arguments).toEqual({});
    expect(fill('open the directory "src"', { name: 'label' }).arguments).toEqual({});
  });
});

describe('identifiers and free text', () => {
  it('reads owner/name slugs and mixed-case identifiers', () => {
    const r = fill('Open an issue in acme/widgets titled "Crash on start"', { name: 'repo', required: true }, { name: 'title', required: true });
    expect(r.arguments).toEqual({ repo: 'acme/widgets', title: 'Crash on start' });
    expect(fill('Show the post rOBhSVKGVKe', { name: 'post_id', required: true }).arguments).toEqual({ post_id: 'rOBhSVKGVKe' });
  });

  it('gives a required query the request itself, minus its verb', () => {
    const r = fill('search for enrichment scripts that use the Apollo API', { name: 'query', required: true });
    expect(r.arguments).toEqual({ query: 'enrichment scripts that use the Apollo API' });
    expect(r.confidence).toBeLessThan(0.5);
  });

  it('keeps a quoted query as quoted', () => {
    expect(fill('search for "apollo enrichment"', { name: 'query', required: true }).arguments).toEqual({ query: 'apollo enrichment' });
  });

  it('places an e-mail address in a recipient parameter and keeps the rest in schema order', () => {
    const r = fill('Email bob@x.com about "Lunch" saying "See you at noon"', { name: 'to', required: true, description: 'Recipient address' }, { name: 'subject', required: true }, { name: 'body', required: true });
    expect(r.arguments).toEqual({ to: 'bob@x.com', subject: 'Lunch', body: 'See you at noon' });
  });
});

describe('lists', () => {
  it('collects a quoted list and a list of names for array parameters', () => {
    const tags: P = { name: 'tags', type: 'array', items: { type: 'string' } };
    expect(fill('Tag the note with tags "food", "weekly" and "home"', tags).arguments).toEqual({ tags: ['food', 'weekly', 'home'] });
    const cities: P = { name: 'cities', type: 'array', required: true };
    expect(fill('Compare weather in cities Paris, London and Rome', cities).arguments).toEqual({ cities: ['Paris', 'London', 'Rome'] });
  });

  it('reads numbers and plain words after the parameter name', () => {
    const scores: P = { name: 'scores', type: 'array', items: { type: 'number' }, required: true };
    expect(fill('Average the scores 1, 2.5 and 3', scores).arguments).toEqual({ scores: [1, 2.5, 3] });
    const ingredients: P = { name: 'ingredients', type: 'array', required: true };
    expect(fill('Find a recipe with ingredients tomatoes, onions and garlic', ingredients).arguments).toEqual({ ingredients: ['tomatoes', 'onions', 'garlic'] });
  });

  it('takes the item type from a JSON Schema `items` through the registry, ignoring types it cannot use', () => {
    const manifest = {
      tool_id: 'stats',
      tool_type: 'api',
      executor: 'http_client',
      version: '1.0.0',
      description: 'Statistics',
      parameters: {
        type: 'object',
        properties: { values: { type: 'array', items: { type: 'number', minimum: 0 } }, tags: { type: 'array', items: { type: ['string', 'null'] } } },
        required: ['values'],
      },
    };
    const parsed = parseToolManifest(JSON.stringify(manifest), { file: '/virtual/stats.yaml', display: 'stats.yaml' }, 'project');
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.parameters.map((p) => p.items)).toEqual([{ type: 'number' }, undefined]);
    expect(fillArguments('Average the values 1, 2.5 and 3', parsed.value).arguments).toEqual({ values: [1, 2.5, 3] });
  });

  it('parses a JSON literal for array and object parameters', () => {
    const r = fill('Filter with {"color": "red"} over [1, 2]', { name: 'filters', type: 'object', required: true }, { name: 'ids', type: 'array', items: { type: 'integer' }, required: true });
    expect(r.arguments).toEqual({ filters: { color: 'red' }, ids: [1, 2] });
  });
});

describe('enums and examples', () => {
  it('matches an enum case-insensitively and returns the member as declared', () => {
    const r = fill('Temperature in fahrenheit for Oslo', { name: 'location', required: true }, { name: 'unit', enum: ['Celsius', 'Fahrenheit'] });
    expect(r.arguments).toEqual({ location: 'Oslo', unit: 'Fahrenheit' });
  });

  it('matches an enum by word form', () => {
    expect(fill('List the archived items', { name: 'status', enum: ['archive', 'active'], required: true }).arguments).toEqual({ status: 'archive' });
  });

  it('does not invent an enum value the text does not name', () => {
    expect(fill('List the items', { name: 'status', enum: ['archive', 'active'], required: true }).missing).toEqual(['status']);
  });

  it('finds lower-case values that the description lists as examples', () => {
    const r = fill('Check the water quality of the lake', { name: 'location', required: true, description: 'Where to measure (e.g., river, lake, beach)' });
    expect(r.arguments).toEqual({ location: 'lake' });
  });
});

describe('places and roles', () => {
  it('assigns origin and destination by from/to, whatever the order of the words', () => {
    const ps: P[] = [{ name: 'origin', required: true }, { name: 'destination', required: true }];
    expect(fill('Find flights from London to Paris', ...ps).arguments).toEqual({ origin: 'London', destination: 'Paris' });
    expect(fill('Find flights to Paris from London', ...ps).arguments).toEqual({ origin: 'London', destination: 'Paris' });
  });

  it('takes a capitalised place after "in" for a location parameter', () => {
    expect(fill('Show job openings in New York', { name: 'city', required: true }).arguments).toEqual({ city: 'New York' });
  });
});

describe('optional parameters, defaults and missing values', () => {
  it('leaves an optional parameter out without evidence and fills it with evidence', () => {
    const ps: P[] = [{ name: 'query', required: true }, { name: 'limit', type: 'integer' }];
    expect(fill('Search for "cats" in 2 ways', ...ps).arguments).toEqual({ query: 'cats' });
    expect(fill('Search for "cats" with a limit of 5', ...ps).arguments).toEqual({ query: 'cats', limit: 5 });
  });

  it('applies the schema default to a required parameter without a value, and never to an optional one', () => {
    const r = fill('Search for "cats"', { name: 'query', required: true }, { name: 'page', type: 'integer', required: true, default: 1 }, { name: 'size', type: 'integer', default: 10 });
    expect(r.arguments).toEqual({ query: 'cats', page: 1 });
    expect(r.missing).toEqual([]);
  });

  it('reports required parameters it cannot fill and invents nothing', () => {
    const r = fill('Do the thing', { name: 'account_id', required: true }, { name: 'amount', type: 'number', required: true });
    expect(r.arguments).toEqual({});
    expect(r.missing).toEqual(['account_id', 'amount']);
    expect(r.confidence).toBe(0);
  });

  it('fills a missing required value from the conversation context, and says so', () => {
    const t = tool({ name: 'destination_city', required: true }, { name: 'date', required: true });
    const r = fillArguments('Book it for 2024-06-01', t, { context: 'User: I want to fly to Lisbon next month.' });
    expect(r.arguments).toEqual({ date: '2024-06-01', destination_city: 'Lisbon' });
    expect(r.notes.some((n) => n.includes('context'))).toBe(true);
    expect(r.confidence).toBeLessThan(1);
  });
});

describe('bad input', () => {
  const ps: P[] = [{ name: 'city', required: true }];
  it('handles an empty intent', () => {
    expect(fill('', ...ps)).toEqual({ arguments: {}, missing: ['city'], confidence: 0, notes: [] });
  });

  it('handles a tool without parameters', () => {
    expect(fillArguments('anything "x" 5', tool())).toEqual({ arguments: {}, missing: [], confidence: 1, notes: [] });
  });

  it('cuts a huge intent and says so', () => {
    const huge = `city=Paris ${'lorem ipsum "x" 12 '.repeat(20_000)} city=Rome`;
    const r = fill(huge, ...ps);
    expect(r.arguments).toEqual({ city: 'Paris' });
    expect(r.notes).toContain(`intent cut to its first ${MAX_INTENT_CHARS} characters`);
  });

  it('treats NUL and control characters as spaces', () => {
    const r = fill('weather in Par\u0000is city="Os\u0001lo"', ...ps);
    expect(r.arguments).toEqual({ city: 'Os lo' });
    expect(JSON.stringify(r)).not.toContain('\u0000');
  });

  it('is not fooled by words and parameter names that are Object.prototype members', () => {
    const r = fill('Call the constructor toString with valueOf "x" and __proto__=1', { name: '__proto__', required: true }, { name: 'constructor' }, { name: 'hasOwnProperty', type: 'integer' });
    expect(Object.hasOwn(r.arguments, '__proto__')).toBe(true);
    expect(r.arguments['__proto__']).toBe('1');
    expect(Object.getPrototypeOf(r.arguments)).toBe(Object.prototype);
    expect(r.missing).toEqual([]);
    expect(fill('the constructor of valueof and tostring', { name: 'constructor', required: true }).missing).toEqual(['constructor']);
  });

  it('survives unbalanced brackets and quotes', () => {
    const r = fill('sand] backfill, a height of [31.7 "and', { name: 'height', type: 'number', required: true });
    expect(r.arguments).toEqual({ height: 31.7 });
  });
});
