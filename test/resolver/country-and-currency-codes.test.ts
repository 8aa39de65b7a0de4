import { describe, expect, it } from 'vitest';
import { asksCountryCode, countryCode } from '../../src/resolver/country-codes.js';
import { asksCurrency, isCurrencyCode } from '../../src/resolver/currency-codes.js';
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

describe('currency codes', () => {
  it('gives a currency code to the parameter that asks for a currency, never to the amount, term or id beside it', () => {
    const transfer = makeTool({ id: 'transfer', parameters: [{ name: 'amount', type: 'string', required: true }, { name: 'currency', type: 'string', required: true }] });
    expect(fillArguments('transfer the amount 500 in USD', transfer).arguments).toEqual({ amount: '500', currency: 'USD' });
    const pay = makeTool({ id: 'pay', parameters: [{ name: 'loanID', type: 'string', required: true }, { name: 'paymentMethod', type: 'string', required: true }] });
    // With no currency parameter the code goes nowhere: asked back rather than sent as the method.
    expect(fillArguments('Pay 500 USD on loan ID L54321', pay)).toMatchObject({ arguments: { loanID: 'L54321' }, missing: ['paymentMethod'] });
    expect([isCurrencyCode('EUR'), isCurrencyCode('ALL'), isCurrencyCode('usd'), isCurrencyCode('XYZ')]).toEqual([true, false, false, false]);
    expect([asksCurrency('toCurrency', ''), asksCurrency('code', 'ISO 4217 code'), asksCurrency('amount', 'How much')]).toEqual([true, true, false]);
  });
});
