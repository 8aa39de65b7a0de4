import { describe, expect, it } from 'vitest';
import { asksCountryCode, countryCode } from '../../src/resolver/country-codes.js';
import { fillArguments } from '../../src/resolver/fill-args.js';
import { makeTool } from '../helpers/make-tool.js';

describe('country codes', () => {
  it("reads a country's name, the short forms people use, or its code, as its ISO 3166-1 alpha-2 code", () => {
    expect(['Germany', 'United States', 'USA', 'the United Kingdom', 'Great Britain', 'Japan', 'South Korea', 'de', 'FR'].map(countryCode)).toEqual(['DE', 'US', 'US', 'GB', 'GB', 'JP', 'KR', 'DE', 'FR']);
    expect(['Europe', 'Paris', 'Germany. I', 'xx', ''].map(countryCode)).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });

  it('knows a parameter that asks for one by its name or its description, and not a country by name', () => {
    expect(asksCountryCode('countryCode', '')).toBe(true);
    expect(asksCountryCode('country_code', '')).toBe(true);
    expect(asksCountryCode('country', 'The 2-letter country code')).toBe(true);
    expect(asksCountryCode('region', 'ISO 3166 code of the region')).toBe(true);
    expect(asksCountryCode('country', 'The country to search in')).toBe(false);
    expect(asksCountryCode('city', '')).toBe(false);
  });

  it('fills a country-code parameter with the code of the country the intent names, and with nothing else', () => {
    const tool = makeTool({ id: 'holidays', parameters: [{ name: 'year', type: 'integer', required: true }, { name: 'countryCode', type: 'string', required: true }] });
    expect(fillArguments('Any long weekends in Germany in 2024? I need to plan.', tool).arguments).toEqual({ year: 2024, countryCode: 'DE' });
    expect(fillArguments('Public holidays in the USA for 2023', tool).arguments).toEqual({ year: 2023, countryCode: 'US' });
    expect(fillArguments('A road trip across Europe in 2023. Can you help?', tool).missing).toEqual(['countryCode']);
  });
});
